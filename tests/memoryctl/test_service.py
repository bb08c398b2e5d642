"""memoryctl service: the systemd unit passes `systemd-analyze verify`, the launchd plist
parses and names paths that exist, the steps print and a dry run changes nothing, and
the daemon speaks sd_notify (READY=1, WATCHDOG=1, STOPPING=1) to a fake NOTIFY_SOCKET."""

from __future__ import annotations

import io
import os
import plistlib
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from memoryctl import service
from tests.conftest import Daemon
from tests.debian import require


@pytest.fixture
def home(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def test_the_unit_passes_systemd_analyze_verify(tmp_path: Path):
    analyze = require("systemd-analyze")
    unit = tmp_path / service.UNIT
    unit.write_text(service.unit_text(tmp_path / "my memory"))
    text = unit.read_text()
    assert "Type=notify" in text and "Restart=on-failure" in text
    assert "WatchdogSec=" in text and "Environment=ORT_DISABLE_TELEMETRY=1" in text
    assert f"ExecStart={sys.executable} -m memoryd serve --root " in text
    assert '"' + str(tmp_path / "my memory") + '"' in text  # a path with a space, quoted
    done = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    complaints = [line for line in done.stderr.splitlines() if service.UNIT in line]
    assert not complaints, complaints  # no unknown keys, no bad values


def test_the_plist_parses_and_names_existing_paths(tmp_path: Path):
    root = tmp_path / "root"
    data = plistlib.loads(service.plist_bytes(root))
    assert data["Label"] == service.LABEL and data["RunAtLoad"] is True
    assert data["KeepAlive"] == {"SuccessfulExit": False}
    program = data["ProgramArguments"]
    assert Path(program[0]).is_file() and os.access(program[0], os.X_OK)
    assert program[1:] == ["-m", "memoryd", "serve", "--root", str(root)]
    assert data["EnvironmentVariables"]["ORT_DISABLE_TELEMETRY"] == "1"
    assert Path(data["StandardErrorPath"]).parent == root / "logs"


def test_a_dry_run_prints_everything_and_changes_nothing(home: Path):
    out = io.StringIO()
    assert service.run("install", home / "mem", "systemd", dry_run=True, out=out) == 0
    shown = out.getvalue()
    assert "[Service]" in shown and "systemctl --user enable --now memoryd.service" in shown
    assert not service.unit_path().exists() and not (home / "mem").exists()
    out = io.StringIO()
    assert service.run("install", home / "mem", "launchd", dry_run=True, out=out) == 0
    assert "launchctl bootstrap gui/" in out.getvalue() and "<plist" in out.getvalue()
    assert not service.plist_path().exists()


def test_install_writes_the_unit_then_reports_a_missing_systemctl(home: Path, monkeypatch):
    monkeypatch.setenv("PATH", str(home / "empty-bin"))  # no systemctl to be found
    out = io.StringIO()
    assert service.run("install", home / "mem", "systemd", out=out) == 1
    assert service.unit_path().read_text() == service.unit_text(home / "mem")
    assert "[1/3] write" in out.getvalue() and "systemctl is not on this machine" in \
        out.getvalue()
    assert service.run("uninstall", home / "mem", "systemd", out=io.StringIO()) == 1


def test_the_daemon_notifies_ready_watchdog_and_stopping(short_tmp: Path, monkeypatch):
    path = short_tmp / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(120)
    monkeypatch.setenv("NOTIFY_SOCKET", str(path))
    monkeypatch.setenv("WATCHDOG_USEC", "400000")  # a ping every 0.2 s
    d = Daemon(short_tmp / "root").start(wait=False)
    try:
        messages = []
        while not any(m.startswith("READY=1") for m in messages):
            messages.append(sock.recv(4096).decode())
        d.wait_ready()
        while "WATCHDOG=1" not in messages:
            messages.append(sock.recv(4096).decode())
        assert d.stop(signal.SIGTERM) == 0
        while "STOPPING=1" not in messages:
            messages.append(sock.recv(4096).decode())
        ready = next(m for m in messages if m.startswith("READY=1"))
        assert "STATUS=serving" in ready
        assert messages.index(ready) < messages.index("STOPPING=1")
    finally:
        sock.close()
        if d.proc and d.proc.poll() is None:
            d.kill()
