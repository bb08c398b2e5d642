"""The allocator's free memory given back: done on glibc, a no-op elsewhere."""

from __future__ import annotations

import platform

from memoryd import allocator


def test_the_allocator_gives_memory_back_where_it_can() -> None:
    glibc = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
    assert allocator.give_back() == glibc
    assert allocator.give_back() == glibc  # again: the same answer, nothing breaks
