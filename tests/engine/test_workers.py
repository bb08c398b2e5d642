"""Reads run side by side, each thread on its own catalog connection."""

from __future__ import annotations

import threading

import trio

from memoryd.engine.workers import READERS, SCORERS, Workers
from memoryd.store.catalog import Catalog

WAIT = 30  # seconds: only reads that queue behind each other would reach it


async def test_reads_run_at_once_on_connections_of_their_own(tmp_path):
    catalog = Catalog(tmp_path / "keyword.sqlite")
    workers = Workers()
    together = threading.Barrier(READERS, timeout=WAIT)  # broken if reads queued
    used: list[int] = []

    def read() -> int:
        conn = catalog.reader
        together.wait()
        used.append(id(conn))
        return catalog.reader.count_rows()

    async with trio.open_nursery() as nursery:
        for _ in range(READERS):
            nursery.start_soon(workers.read, read)
    assert len(set(used)) == READERS, "one connection a reading thread"
    assert catalog.reader_count() == READERS
    catalog.close()
    assert catalog.reader_count() == 0


def test_a_reader_connection_outlives_its_thread_only_until_the_next_opens(tmp_path):
    catalog = Catalog(tmp_path / "keyword.sqlite")
    opened = []
    thread = threading.Thread(target=lambda: opened.append(catalog.reader))
    thread.start()
    thread.join()
    assert catalog.reader_count() == 1
    assert catalog.reader is not opened[0] and catalog.reader_count() == 1, \
        "the ended thread's connection is closed when this one opens"
    catalog.close()


async def test_ranked_searches_score_one_a_core_and_leave_reads_a_thread():
    """More searches than cores wait for a turn (none fails) holding no reading thread,
    so a plain read beside them runs at once."""
    workers = Workers()
    release = threading.Event()
    started = threading.Semaphore(0)
    lock = threading.Lock()
    running, most = [0], [0]

    def search() -> None:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        started.release()
        release.wait(WAIT)
        with lock:
            running[0] -= 1

    async with trio.open_nursery() as nursery:
        for _ in range(SCORERS + 3):
            nursery.start_soon(workers.score, search)
        for _ in range(SCORERS):
            assert await trio.to_thread.run_sync(started.acquire, True, WAIT)
        with trio.fail_after(WAIT):  # a list or point read: not behind the searches
            assert await workers.read(lambda: "read") == "read"
        release.set()
    assert most[0] == SCORERS, "one search a core at once, the rest waiting"
