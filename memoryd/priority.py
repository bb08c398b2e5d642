"""Background work's CPU priority: a search's thread gets the cores first.

The threads that embed ahead of a write and the vector store's process do work no
caller waits for at once (a write is acknowledged before its vectors are persisted):
they run at BACKGROUND_NICE, so that while a search wants a core they get about a
tenth of it (the kernel weighs nice 0 against 10 at 1024 to 110) and, alone, all of it.
"""

from __future__ import annotations

import os
import sys
import threading

import structlog

log = structlog.get_logger("memoryd.priority")

BACKGROUND_NICE = 10


def background_priority() -> None:
    """Lower the calling thread's CPU priority to BACKGROUND_NICE (Linux, where a
    thread has a niceness of its own, and the threads it starts inherit it; elsewhere
    nothing). Never raised back: that needs a privilege the daemon does not have, so
    only threads kept for background work call it."""
    if sys.platform == "linux":
        _lower([threading.get_native_id()])


def background_process() -> None:
    """Every thread of this process at BACKGROUND_NICE, those already running (a
    library's pool started at its import) and, through the calling thread, those it
    starts (Linux; elsewhere the whole process is lowered, as a process is there)."""
    if sys.platform == "linux":
        _lower([int(t) for t in os.listdir("/proc/self/task")])
        return
    _lower([0])


def _lower(ids: list[int]) -> None:
    for tid in ids:
        try:
            os.setpriority(os.PRIO_PROCESS, tid, max(os.getpriority(os.PRIO_PROCESS, tid),
                                                     BACKGROUND_NICE))
        except ProcessLookupError:
            continue  # a thread that ended meanwhile
        except OSError as exc:  # a sandbox that forbids it: the default priority stands
            log.warning("priority.unchanged", error=str(exc))
            return
