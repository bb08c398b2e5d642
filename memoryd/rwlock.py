"""RWLock: many readers at once, or one writer.

The corpus is read by every smart search (in the reader threads, in parallel: numpy
and onnxruntime release the GIL) and changed by the one writer thread. A waiting
writer goes before readers who arrive after it, so a stream of searches cannot
starve writes. A thread may re-enter what it holds, and the writer may read while it
writes; a reader asking to write would wait for itself, and is refused.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


class RWLock:
    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0  # threads holding a read
        self._writer: int | None = None
        self._writes = 0  # the writer's re-entries
        self._waiting = 0  # writers waiting
        self._mine = threading.local()  # this thread's read re-entries

    @property
    def readers(self) -> int:
        """Threads holding a read now (what a test or `stats` may look at)."""
        with self._cond:
            return self._readers

    @property
    def writers_waiting(self) -> int:
        """Writers waiting for the readers to leave."""
        with self._cond:
            return self._waiting

    @contextlib.contextmanager
    def read(self) -> Iterator[None]:
        me = threading.get_ident()
        held = getattr(self._mine, "reads", 0)
        if held or self._writer == me:  # re-entry, or the writer reading its own work
            self._mine.reads = held + 1
            try:
                yield
            finally:
                self._mine.reads -= 1
            return
        with self._cond:
            while self._writer is not None or self._waiting:
                self._cond.wait()
            self._readers += 1
        self._mine.reads = 1
        try:
            yield
        finally:
            self._mine.reads = 0
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        me = threading.get_ident()
        with self._cond:
            if self._writer != me:
                if getattr(self._mine, "reads", 0):
                    raise RuntimeError("a thread reading the corpus cannot start writing it")
                self._waiting += 1
                try:
                    while self._writer is not None or self._readers:
                        self._cond.wait()
                finally:
                    self._waiting -= 1
                self._writer = me
            self._writes += 1
        try:
            yield
        finally:
            with self._cond:
                self._writes -= 1
                if not self._writes:
                    self._writer = None
                    self._cond.notify_all()
