"""SharedWork: blocks of one search's work that a second thread can take a share of.

A smart search with a core idle runs on two threads: one scores the keywords, the
other embeds the query and then scores the nearest cells' rows, which takes longer.
The second posts those rows' blocks here and works through them; the first, done
with its keywords, takes blocks too instead of waiting (`help_until`). Each block
runs once, on whichever thread took it; `map` returns when every block is done.
`Beside` is the hand-off between the two threads.
"""

from __future__ import annotations

import functools
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, Generic, TypeVar, cast

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


A = TypeVar("A")
H = TypeVar("H")
B = TypeVar("B")


class Beside(Generic[A, H, B]):
    """Work for a second thread (the one hand-off of a search between threads): it
    starts at once (`first`: the query's embedding, no lock needed) and then needs a
    value this thread makes (`hand`: the filter's mask, made under the corpus's read
    hold) to finish (`then`: the nearest rows). `result` takes a share of the blocks
    `then` posts rather than wait. Without a `pool` (no core idle) both run on this
    thread: `first` at once, `then` in `result`. `close`, always (in a finally, inside
    the read hold), withdraws a value never handed and waits for the other thread,
    which must not read the corpus after the hold ends."""

    def __init__(self, pool: ThreadPoolExecutor | None, first: Callable[[], A],
                 then: Callable[[A, H, SharedWork | None], B]) -> None:
        self._handed: Future[H] = Future()
        self._then = then
        self.shared = SharedWork() if pool is not None else None
        self._done: Future[tuple[A, B]] | None = None
        self._first: A | None = None
        if pool is None:
            self._first = first()
        else:
            self._done = pool.submit(self._both, first)

    def _both(self, first: Callable[[], A]) -> tuple[A, B]:
        made = first()
        return made, self._then(made, self._handed.result(), self.shared)

    def hand(self, value: H) -> None:
        self._handed.set_result(value)

    def result(self) -> tuple[A, B]:
        if self._done is None:
            made = cast(A, self._first)
            return made, self._then(made, self._handed.result(), None)
        assert self.shared is not None
        self.shared.help_until(self._done)
        return self._done.result()

    def close(self) -> None:
        self._handed.cancel()
        if self._done is not None:
            wait([self._done])
