"""RWLock: readers together, the writer alone, a waiting writer first."""

from __future__ import annotations

import threading

import pytest

from memoryd.rwlock import RWLock

WAIT = 30  # seconds: only a deadlock would reach it


def run(fn) -> threading.Thread:
    thread = threading.Thread(target=fn, daemon=True)
    thread.start()
    return thread


def test_readers_hold_it_together():
    lock = RWLock()
    inside = threading.Barrier(4, timeout=WAIT)  # broken unless all 4 are inside at once

    def reader() -> None:
        with lock.read():
            inside.wait()

    threads = [run(reader) for _ in range(4)]
    for t in threads:
        t.join(WAIT)
    assert not inside.broken and not any(t.is_alive() for t in threads)


def test_writer_excludes_readers_and_goes_before_later_ones():
    lock = RWLock()
    order: list[str] = []
    reading, release = threading.Event(), threading.Event()

    def first_reader() -> None:
        with lock.read():
            reading.set()
            release.wait(WAIT)
            order.append("reader 1 done")

    def writer() -> None:
        with lock.write():
            order.append("writer")

    def late_reader() -> None:
        with lock.read():
            order.append("reader 2")

    r1 = run(first_reader)
    assert reading.wait(WAIT)
    w = run(writer)
    while not lock.writers_waiting:  # the writer is queued behind reader 1
        threading.Event().wait(0.001)
    r2 = run(late_reader)
    threading.Event().wait(0.05)
    assert order == [], "neither the writer nor a later reader gets in while reader 1 reads"
    release.set()
    for t in (r1, w, r2):
        t.join(WAIT)
    assert order == ["reader 1 done", "writer", "reader 2"]


def test_reentry_and_the_writer_reading():
    lock = RWLock()
    with lock.write(), lock.write(), lock.read():
        pass
    refused = pytest.raises(RuntimeError, match="cannot start writing")
    with lock.read(), lock.read(), refused, lock.write():
        pass
    done = threading.Event()
    run(lambda: (lock.write().__enter__(), done.set()))  # free again: a writer gets in
    assert done.wait(WAIT)
