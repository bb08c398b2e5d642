"""Shared fixtures: a real `memoryd serve` subprocess on a temp root, and `rig`: the
real engine with fakes over a temp root (tests/rig.py), started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd_client import Client, DaemonUnavailable, RpcFailure
from tests.rig import Rig


@pytest.hookimpl(optionalhook=True)  # xdist's hook: `-p no:xdist` still runs the suite
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto`: a worker more than the cores this process may use. An end-to-end
    test waits on its daemon, its git, its browser for part of its time, and with a
    worker a core the cores stood a fifth idle. `PYTEST_XDIST_AUTO_NUM_WORKERS` still
    decides where it is set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cores or 1) + 1


class Daemon:
    """A memoryd process under test; `client()` opens a fresh socket connection."""

    def __init__(self, root: Path, extra_args: list[str] | None = None,
                 config: str | None = None) -> None:
        self.root = root
        self.socket = root / "memory.sock"
        self.extra_args = extra_args or []
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = root.parent / f"{root.name}.log"
        if config is not None:
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
            (root / "config.yaml").write_text(config)

    def start(self, wait: bool = True) -> Daemon:
        env = dict(os.environ, HOME=str(self.root.parent))
        self._log = open(self.log_path, "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memoryd", "serve", "--root", str(self.root),
             "--log-format", "json", *self.extra_args],
            stdout=self._log, stderr=self._log, env=env,
            start_new_session=True)  # a process group of its own: see `stop`
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout: float = 180.0) -> None:
        # Generous: a loaded 2-core machine may take long to start; a healthy start is
        # seen at once, so the bound costs nothing.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"memoryd exited with {self.proc.returncode}:\n{self.log}")
            try:
                with Client(self.socket, timeout=5, retries=0) as c:
                    status = c.call("health")["status"]
                if status == "ok":  # "starting": the indexes are being built
                    return
                time.sleep(0.05)
            except (DaemonUnavailable, OSError, RpcFailure):
                time.sleep(0.05)
        raise AssertionError(f"memoryd did not become ready:\n{self.log}")

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def client(self, timeout: float = 30.0) -> Client:
        return Client(self.socket, timeout=timeout, retries=0)

    def call(self, method: str, params: dict | None = None):
        with self.client() as c:
            return c.call(method, params)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout)
            self._end_children(timeout)
        finally:
            self._log.close()
        return code

    def _end_children(self, timeout: float) -> None:
        """What systemd does when the service stops (its control group ends): a child the
        daemon left running (a git commit, after a kill -9) ends too, so it cannot write
        into a root the test goes on with, or removes. SIGTERM: git drops its locks."""
        assert self.proc is not None
        group = self.proc.pid
        try:
            os.killpg(group, signal.SIGTERM)
        except ProcessLookupError:
            return  # none left: the usual case
        deadline = time.monotonic() + timeout
        while _running_in_group(group):
            if time.monotonic() > deadline:
                raise AssertionError(f"the daemon's children outlived it by {timeout} s")
            time.sleep(0.02)

    def kill(self) -> None:
        self.stop(signal.SIGKILL)


def _running_in_group(group: int) -> bool:
    """A process of this group still runs (a zombie waiting for init to reap it does
    not count: it writes nothing)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # it ended while we looked
        if int(fields[2]) == group and fields[0] != "Z":  # pgrp, state
            return True
    return False


@pytest.fixture(scope="session", autouse=True)
def model_cache() -> Iterator[Path]:
    """One user's model cache for the whole run, as on a user's machine: the first
    daemon makes the int8 model, the others load it (and nothing is written to ~)."""
    with tempfile.TemporaryDirectory(prefix="md-cache-") as tmp, \
            pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", tmp)
        yield Path(tmp)


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    # Unix socket paths are limited to ~104 bytes: pytest's tmp_path can be longer.
    with tempfile.TemporaryDirectory(prefix="md-") as tmp:
        yield Path(tmp)


@pytest.fixture
def daemon(short_tmp: Path) -> Iterator[Daemon]:
    d = Daemon(short_tmp / "root").start()
    yield d
    if d.proc and d.proc.poll() is None:
        d.stop()


@pytest.fixture(scope="module")
def module_daemon() -> Iterator[Daemon]:
    """One daemon for a module's checks that change nothing (parameter checks)."""
    with tempfile.TemporaryDirectory(prefix="md-") as tmp:
        d = Daemon(Path(tmp) / "root").start()
        yield d
        if d.proc and d.proc.poll() is None:
            d.stop()


@pytest.fixture
def make_daemon(short_tmp: Path) -> Iterator:
    started: list[Daemon] = []

    def make(name: str = "root", **kwargs) -> Daemon:
        d = Daemon(short_tmp / name, **kwargs)
        started.append(d)
        return d

    yield make
    for d in started:
        if d.proc and d.proc.poll() is None:
            d.stop(signal.SIGKILL)


@pytest.fixture
async def rig(tmp_path: Path):
    rig = Rig(tmp_path)
    await rig.start()
    yield rig
    rig.close()
