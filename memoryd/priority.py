"""Background work's CPU priority: a search's thread gets the cores first.

The threads that embed ahead of a write, the vector store's process and git do work no
caller waits for at once (a write is acknowledged before its vectors are persisted and
before its history commit): they run at BACKGROUND_NICE, so that while a search wants a
core they get about a tenth of it (the kernel weighs nice 0 against 10 at 1024 to 110)
and, alone, all of it.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable

import structlog

log = structlog.get_logger("memoryd.priority")

BACKGROUND_NICE = 10


def background_priority() -> None:
    """Lower the calling thread's CPU priority to BACKGROUND_NICE (Linux, where a
    thread has a niceness of its own, and the threads it starts inherit it; elsewhere
    nothing). Never raised back: that needs a privilege the daemon does not have, so
    only threads kept for background work call it."""
    if sys.platform == "linux":
        _each([threading.get_native_id()], _lower)


def background_process() -> None:
    """Every thread of this process at BACKGROUND_NICE, those already running (a
    library's pool started at its import) and, through the calling thread, those it
    starts (Linux; elsewhere the whole process is lowered, as a process is there)."""
    _each(_threads(), _lower)


def background_child(pid: int) -> None:
    """A child process just started, at BACKGROUND_NICE: on Linux its first thread,
    which every thread and process it starts from then on inherits; elsewhere the
    whole process."""
    _each([pid], _lower)


def idle_process() -> None:
    """Every thread of this process, and those it starts, in the kernel's idle class
    (Linux's SCHED_IDLE: it runs only on a core no other thread wants, and gives it up
    the moment one does); elsewhere at the lowest niceness. For a process whose every
    call has a fallback in the daemon (models/apart.py): a thread there could be
    stopped holding a lock the daemon waits for."""
    if sys.platform == "linux":
        _each(_threads(), lambda tid: os.sched_setscheduler(tid, os.SCHED_IDLE,
                                                            os.sched_param(0)))
    else:
        _each([0], lambda pid: os.setpriority(os.PRIO_PROCESS, pid, 19))


def _threads() -> list[int]:
    """This process's threads (Linux: each has a priority of its own), or 0: the whole
    process, as a process is elsewhere."""
    if sys.platform == "linux":
        return [int(t) for t in os.listdir("/proc/self/task")]
    return [0]


def _lower(tid: int) -> None:
    os.setpriority(os.PRIO_PROCESS, tid, max(os.getpriority(os.PRIO_PROCESS, tid),
                                             BACKGROUND_NICE))


def _each(ids: list[int], change: Callable[[int], None]) -> None:
    for tid in ids:
        try:
            change(tid)
        except ProcessLookupError:
            continue  # a thread that ended meanwhile
        except OSError as exc:  # a sandbox that forbids it: the default priority stands
            log.warning("priority.unchanged", error=str(exc))
            return
