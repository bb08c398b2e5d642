"""Memory the allocator holds, given back to the system.

glibc's malloc keeps what a program frees in its arenas for reuse: after a burst of
writes (their batches, their embeddings, a closed vector store's indexes) a
long-running daemon would carry that peak for days. Two calls:

- `tune()`, at a process's start: a block of MAP_ABOVE bytes or more is mapped on its
  own and unmapped when freed. glibc's default raises that threshold to the size of
  each mapped block freed (up to 32 MiB): once the corpus grew its columns or a large
  batch was freed, every later model call's and search's buffers came from the arenas
  and stayed there, a little more fragmented with each write. Fixed, the arenas hold
  only the smaller blocks. Fixing it also fixes the free top of a heap kept before it
  is returned (glibc's default would then be 128 KiB): TRIM_ABOVE, twice MAP_ABOVE as
  glibc's own rule would make it. And malloc keeps at most ARENAS arenas: by default
  each thread gets one of its own at its first allocation (up to eight a core), and
  each keeps the fragments of what was freed in it; the daemon's threads (the event
  loop, the writer, searches, the embedder's) spread every write's short-lived
  buffers over as many arenas, and a trim returns only whole free pages.
- `give_back()`, when writes stop: `malloc_trim(0)` returns the free pages at the top
  of each arena and the whole free pages inside them. While writes go on without a
  pause (an ingest, a sync, a busy agent), `Periodic` gives back at most once every
  TRIM_EVERY seconds: without it, the blocks a long stream of writes freed stay in the
  arenas, fragmented, and the daemon grows by what its busiest minute freed.

Elsewhere (macOS' allocator, musl) there are no such calls and nothing to do.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import time
from collections.abc import Callable

import structlog

log = structlog.get_logger("memoryd.allocator")


# Blocks this large or larger are mapped on their own. A search's arrays at 100,000
# memories (a score a row: 400 KB) stay below it and reuse the arenas' blocks: mapped,
# each would be faulted in afresh on every search. A heap's free top is kept up to
# TRIM_ABOVE: returned at every free past 128 KiB, it is faulted in again by the next
# batch, and searches beside writes were slower for it (bench/soak.py's p99).
MAP_ABOVE = 4 << 20
TRIM_ABOVE = 2 * MAP_ABOVE
# Arenas malloc may keep (the main one counted). With one, every thread that allocates
# outside the GIL (the model's, chroma's) would wait on a single lock; two were measured
# (bench/README.md, "Half an hour at work"), one was not.
ARENAS = 2
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8  # glibc's malloc.h
# Seconds between two trims while writes go on. A trim locks each arena in turn while
# it walks it: once a minute, a search seldom meets one.
TRIM_EVERY = 60.0


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


@functools.cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.malloc_trim.argtypes, libc.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
        libc.mallopt.argtypes, libc.mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    except (OSError, AttributeError):  # not glibc
        return None
    if hasattr(libc, "mallinfo2"):  # glibc 2.33 and later
        libc.mallinfo2.argtypes, libc.mallinfo2.restype = [], _MallInfo2
    return libc


def tune() -> bool:
    """Large blocks mapped on their own, and at most ARENAS arenas, from now on (see
    the module's docstring); whether the allocator took it."""
    libc = _libc()
    taken = (libc is not None and libc.mallopt(_M_MMAP_THRESHOLD, MAP_ABOVE) == 1
             and libc.mallopt(_M_TRIM_THRESHOLD, TRIM_ABOVE) == 1
             and libc.mallopt(_M_ARENA_MAX, ARENAS) == 1)
    log.debug("allocator.tuned", taken=taken, map_above=MAP_ABOVE, trim_above=TRIM_ABOVE,
              arenas=ARENAS)
    return taken


def held() -> dict[str, int] | None:
    """What malloc holds, in bytes, over all its arenas: `in_use` (blocks the program
    holds), `free` (freed blocks it keeps in its arenas for reuse: what a trim could
    return, in whole pages), `mapped` (blocks mapped on their own). None where the
    allocator cannot tell (not glibc 2.33 or later)."""
    libc = _libc()
    if libc is None or not hasattr(libc, "mallinfo2"):
        return None
    info = libc.mallinfo2()
    return {"in_use": info.uordblks, "free": info.fordblks, "mapped": info.hblkhd}


def give_back() -> bool:
    """Free memory the allocator holds returned to the system; whether it could be."""
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


class Periodic:
    """`give_back()` at most once every `every` seconds, for work that never pauses:
    `tick()` after each piece of it (the writer thread's, or the vector process's)."""

    def __init__(self, every: float = TRIM_EVERY,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.every, self.clock = every, clock
        self.last = clock()

    def tick(self) -> bool:
        """Whether memory was given back now."""
        now = self.clock()
        if now - self.last < self.every:
            return False
        self.last = now
        return give_back()
