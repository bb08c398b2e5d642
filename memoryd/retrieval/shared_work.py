"""SharedWork: blocks of one search's work that a second thread can take a share of.

A smart search with a core idle runs on two threads: one scores the keywords, the
other embeds the query and then scores the nearest cells' rows, which takes longer.
The second posts those rows' blocks here and works through them; the first, done
with its keywords, takes blocks too instead of waiting (`help_until`). Each block
runs once, on whichever thread took it; `map` returns when every block is done.
"""

from __future__ import annotations

import functools
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class SharedWork:
    def __init__(self) -> None:
        self._ready = threading.Condition()  # blocks posted, or the awaited work done
        self._queue: deque[Callable[[], None]] = deque()

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """`[fn(item) for item in items]`, the items taken by this thread and any thread
        in `help_until` meanwhile. The first error is raised here once every taken
        item has ended (none is left running)."""
        results: list[Any] = [None] * len(items)
        errors: list[BaseException] = []
        left = [len(items)]
        finished = threading.Event()

        def run(i: int) -> None:
            try:
                results[i] = fn(items[i])
            except BaseException as exc:  # raised on the posting thread, below
                errors.append(exc)
            finally:
                with self._ready:
                    left[0] -= 1
                    if not left[0]:
                        finished.set()

        if not items:
            return []
        with self._ready:
            self._queue.extend(functools.partial(run, i) for i in range(len(items)))
            self._ready.notify_all()
        self._work()
        finished.wait()
        if errors:
            raise errors[0]
        return results

    def help_until(self, awaited: Future[Any]) -> None:
        """Take posted items until `awaited` is done (it need not post any)."""
        awaited.add_done_callback(self._wake)
        while True:
            self._work()
            with self._ready:
                while not self._queue and not awaited.done():
                    self._ready.wait()
                if not self._queue:
                    return

    def _work(self) -> None:
        while True:
            with self._ready:
                if not self._queue:
                    return
                item = self._queue.popleft()
            item()

    def _wake(self, _: Future[Any]) -> None:
        with self._ready:
            self._ready.notify_all()
