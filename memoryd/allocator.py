"""Memory the allocator holds, given back to the system.

glibc's malloc keeps what a program frees in its arenas for reuse: after a burst of
writes (their batches, their embeddings, a closed vector store's indexes) a
long-running daemon would carry that peak for days. `malloc_trim(0)` returns the free
pages at the top of each arena and the whole free pages inside them. Elsewhere (macOS'
allocator, musl) there is no such call and nothing to do.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

import structlog

log = structlog.get_logger("memoryd.allocator")


@functools.cache
def _trim() -> object | None:
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def give_back() -> bool:
    """Free memory the allocator holds returned to the system; whether it could be."""
    trim = _trim()
    if trim is None:
        return False
    trim(0)  # type: ignore[operator]
    return True
