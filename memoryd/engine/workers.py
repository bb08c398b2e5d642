"""Workers: the threads every blocking store operation runs in.

Changes are serialised by one lock and run in a worker thread (fsync and SQLite
block); a started change always finishes, even when its caller is cancelled
(unless it asks to be abandoned, as a long start-up does on SIGTERM). Reads run
in up to READERS threads at once, so smart searches from different connections do
not queue behind each other: each thread has its own catalog connection
(store/catalog.py), and the corpus lets many readers score at once (rwlock.py).
Ranked searches (`score`) run in at most SCORERS threads at once, one a core: a
search is nearly all CPU, and more at once than there are cores only take turns on
them, each evicting the others' working set from the cache (8 connections at 130,000
memories: 11-12 ms of CPU a search with 2 scoring, 13-14 ms with 4). They wait for a
turn on the event loop, holding no reading thread, so a list or a point read beside
them does not queue behind them.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import trio

from memoryd.retrieval.pipeline import CORES

T = TypeVar("T")
SCORERS = CORES
# numpy, onnxruntime and SQLite release the GIL: 2 cores keep 4 busy. Two more than
# score at once, so other reads always find a thread beside the searches.
READERS = SCORERS + 2


class Workers:
    def __init__(self) -> None:
        self._write_lock = trio.Lock()
        self._holder: object | None = None  # the task inside `exclusive`, if one is
        self._read_limiter = trio.CapacityLimiter(READERS)
        self._score_limiter = trio.CapacityLimiter(SCORERS)

    async def write(self, fn: Callable[..., T], *args: Any, abandon: bool = False) -> T:
        if self._holder is not None and self._holder is trio.lowlevel.current_task():
            return await trio.to_thread.run_sync(fn, *args, abandon_on_cancel=abandon)
        async with self._write_lock:
            return await trio.to_thread.run_sync(fn, *args, abandon_on_cancel=abandon)

    @contextlib.asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        """No change but the holder's runs while this is held (reads go on): a sync's
        merge writes files and indexes them before any other change may see them (a
        hand-edit event for one of them would otherwise be indexed first, as an edit)."""
        async with self._write_lock:
            self._holder = trio.lowlevel.current_task()
            try:
                yield
            finally:
                self._holder = None

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        return await trio.to_thread.run_sync(fn, *args, limiter=self._read_limiter)

    async def score(self, fn: Callable[..., T], *args: Any) -> T:
        """A read that is mostly CPU (a ranked search): one a core at once."""
        async with self._score_limiter:
            return await self.read(fn, *args)
