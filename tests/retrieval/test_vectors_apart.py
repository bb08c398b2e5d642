"""The embedded vector store in a process of its own (retrieval/vectors_apart.py): the
same answers as in process, a process that ends when released, closed or orphaned, a
child killed under a call failing that call only, and chroma's errors raised as
themselves."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest
from structlog.testing import capture_logs

from memoryd.priority import BACKGROUND_NICE
from memoryd.retrieval.vectors import ChromaVectors, text_hash
from memoryd.retrieval.vectors_apart import ApartVectors, VectorsLost
from tests.fakes import never_ready_interpreter

REPO = Path(__file__).resolve().parents[2]
MODEL = "mini"


def _vectors(n: int, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, 8)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _write(store, scope: str, ids: list[str], seed: int = 0) -> np.ndarray:
    vectors = _vectors(len(ids), seed)
    store.upsert("own", scope, ids, vectors, [text_hash(i) for i in ids], MODEL)
    return vectors


def _stored(store) -> dict[str, np.ndarray]:
    return {i: v for _, _, ids, vs, _ in store.scan(MODEL) for i, v in zip(ids, vs, strict=True)}


def _ended(pid: int, timeout: float) -> bool:
    """Whether process `pid` (not ours to wait for) ends within `timeout` seconds."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


@pytest.fixture
def apart(tmp_path):
    store = ApartVectors(tmp_path / "chroma")
    yield store
    store.close()


def test_it_answers_as_the_store_in_process_does(apart, tmp_path):
    assert apart.collection_ids() == [] and apart.pid is None  # a new store starts nothing
    assert list(apart.scan(MODEL)) == [] and apart.pid is None
    written = _write(apart, "user:a", ["m1", "m2", "m3"])
    apart.delete("user:a", ["m2"])
    got = _stored(apart)
    assert sorted(got) == ["m1", "m3"]
    assert np.allclose(got["m1"], written[0], atol=1e-6)
    ids = apart.collection_ids()
    apart.close()
    inline = ChromaVectors(tmp_path / "chroma")
    try:
        assert sorted(_stored(inline)) == ["m1", "m3"]
        assert inline.collection_ids() == ids
    finally:
        inline.close()


@pytest.mark.skipif(sys.platform != "linux", reason="a thread's own niceness is Linux's")
def test_its_every_thread_runs_at_background_priority(apart):
    """Persisting vectors is background work: the daemon's searches get the cores
    first. Every thread: chroma's, which inherit it, and a pool a library started when
    it was imported, before the child could lower anything."""
    _write(apart, "user:a", ["m1"])
    threads = list(Path(f"/proc/{apart.pid}/task").iterdir())
    assert len(threads) > 1  # chroma's threads, not only the main one
    for thread in threads:
        assert os.getpriority(os.PRIO_PROCESS, int(thread.name)) >= BACKGROUND_NICE


def test_released_it_ends_and_the_next_use_starts_another(apart):
    _write(apart, "user:a", ["m1"])
    first = apart.pid
    assert first is not None and not apart.release(3600)  # used just now: kept
    assert apart.release(0) and apart.pid is None
    assert _ended(first, 30)
    ids = apart.collection_ids()  # from the store's file: nothing is started for it
    assert ids and apart.pid is None
    _write(apart, "user:a", ["m2"], seed=1)
    assert apart.pid not in (None, first)
    assert sorted(_stored(apart)) == ["m1", "m2"]


def test_a_child_killed_fails_one_call_and_the_next_starts_another(apart):
    _write(apart, "user:a", ["m1"])
    pid = apart.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert _ended(pid, 30)
    with pytest.raises(VectorsLost):
        _write(apart, "user:a", ["m2"], seed=1)
    _write(apart, "user:a", ["m2"], seed=1)  # the caller keeps it pending and tries again
    assert sorted(_stored(apart)) == ["m1", "m2"]


def test_a_terminal_or_service_stop_signal_does_not_cut_a_write(apart):
    _write(apart, "user:a", ["m1"])
    pid = apart.pid
    assert pid is not None
    for sig in (signal.SIGINT, signal.SIGTERM):
        os.kill(pid, sig)  # sent to the whole group: the daemon ends its child itself
    _write(apart, "user:a", ["m2"], seed=1)
    assert apart.pid == pid and sorted(_stored(apart)) == ["m1", "m2"]


def test_a_child_still_starting_is_killed_at_close_not_waited_for(tmp_path, monkeypatch):
    """A stop soon after the first write does not wait out chroma's start-up; the next
    use starts a child anew."""
    never_ready, said = never_ready_interpreter(tmp_path)
    monkeypatch.setattr(sys, "executable", str(never_ready))
    store = ApartVectors(tmp_path / "chroma")
    store.warm()
    pid = int(said.read_text())  # (the child is running)
    monkeypatch.undo()
    with capture_logs() as logs:
        closing = threading.Thread(target=store.close)
        closing.start()
        closing.join(120)
        assert not closing.is_alive(), "close waited for a start that never ends"
    assert _ended(pid, 30)
    assert [e for e in logs if e["event"] == "vectors.start_abandoned"]
    assert not [e for e in logs if e["log_level"] == "error"]
    try:
        _write(store, "user:a", ["m1"])
        assert sorted(_stored(store)) == ["m1"]
    finally:
        store.close()


def test_an_error_is_raised_as_itself_and_the_child_goes_on(apart):
    _write(apart, "user:a", ["m1"])
    with pytest.raises(ValueError, match="text hash"):
        apart.upsert("own", "user:a", ["m2"], _vectors(1), ["not a hash"], MODEL)
    _write(apart, "user:a", ["m3"], seed=2)
    assert sorted(_stored(apart)) == ["m1", "m3"]


def test_the_child_ends_when_the_daemon_dies(tmp_path):
    script = textwrap.dedent(f"""
        import os, sys
        import numpy as np
        from pathlib import Path
        from memoryd.retrieval.vectors import text_hash
        from memoryd.retrieval.vectors_apart import ApartVectors
        store = ApartVectors(Path({str(tmp_path / "chroma")!r}))
        store.upsert("own", "user:a", ["m1"], np.ones((1, 8), dtype=np.float32),
                     [text_hash("m1")], "mini")
        print(store.pid, flush=True)
        os._exit(0)  # no close: as a daemon killed
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert _ended(int(done.stdout.split()[-1]), 60)


def test_a_store_that_cannot_be_opened_fails_each_call_with_its_error(tmp_path):
    (tmp_path / "chroma").write_text("a file where the store's folder goes")
    store = ApartVectors(tmp_path / "chroma")
    try:
        with pytest.raises(FileExistsError):
            _write(store, "user:a", ["m1"])
        assert store.pid is None and store.ready
    finally:
        store.close()
