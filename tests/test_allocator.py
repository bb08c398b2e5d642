"""The allocator's free memory given back: done on glibc, a no-op elsewhere."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap

import pytest

from memoryd import allocator

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"

# A fresh interpreter: frees a 16 MiB block (glibc's own threshold would rise to it),
# then holds six 8 MiB blocks, each followed by a small block that stays, and frees the
# large ones. Prints the MiB still resident of the 48 freed.
_HELD_AFTER_FREE = textwrap.dedent("""
    import os, sys
    from memoryd import allocator
    if sys.argv[1] == "tuned":
        assert allocator.tune()
    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    big = b"\\x01" * (16 << 20)
    del big
    base = rss()
    blocks, pins = [], []
    for _ in range(6):
        blocks.append(b"\\x01" * (8 << 20))
        pins.append(bytearray(200_000))
    del blocks
    print(round(rss() - base))
""")


def test_the_allocator_gives_memory_back_where_it_can() -> None:
    assert allocator.give_back() == GLIBC
    assert allocator.give_back() == GLIBC  # again: the same answer, nothing breaks


def _in_a_fresh_interpreter(script: str, how: str) -> int:
    """The number `script` prints last, run as `how` ("plain" or "tuned") in a fresh
    interpreter without the caller's MALLOC_ settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    done = subprocess.run([sys.executable, "-c", script, how], env=env,
                          capture_output=True, text=True, check=True, timeout=60)
    return int(done.stdout.split()[-1])


@pytest.mark.skipif(not GLIBC, reason="mallopt is glibc's")
def test_tuned_a_freed_large_block_goes_back_to_the_system_at_once() -> None:
    assert allocator.MAP_ABOVE <= 8 << 20  # the blocks below are above the threshold
    # glibc's default keeps them in its heap; tuned, each is mapped on its own and
    # unmapped when freed
    assert _in_a_fresh_interpreter(_HELD_AFTER_FREE, "plain") >= 40
    assert _in_a_fresh_interpreter(_HELD_AFTER_FREE, "tuned") <= 4


# A fresh interpreter: eight threads each allocate while all are alive (a thread's first
# block comes from an arena of its own while malloc may make one), then malloc_info's
# report is counted: the heaps (arenas) it holds.
_ARENAS_AFTER_THREADS = textwrap.dedent("""
    import ctypes, ctypes.util, os, sys, tempfile, threading
    from memoryd import allocator
    if sys.argv[1] == "tuned":
        assert allocator.tune()
    ready = threading.Barrier(9)
    def work():
        held = [bytearray(50_000) for _ in range(20)]
        ready.wait()
        ready.wait()
    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    ready.wait()
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.fdopen.restype = ctypes.c_void_p
    libc.fdopen.argtypes = [ctypes.c_int, ctypes.c_char_p]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    with tempfile.TemporaryFile() as report:
        stream = libc.fdopen(os.dup(report.fileno()), b"w")
        libc.malloc_info(0, stream)
        libc.fclose(stream)
        report.seek(0)
        print(report.read().count(b"<heap nr="))
    ready.wait()
    for t in threads:
        t.join()
""")


@pytest.mark.skipif(not GLIBC, reason="mallopt is glibc's")
def test_tuned_threads_share_at_most_two_arenas() -> None:
    """Each arena keeps the fragments of what was freed in it: the daemon's threads
    spread over a few, not one each."""
    assert _in_a_fresh_interpreter(_ARENAS_AFTER_THREADS, "plain") > allocator.ARENAS
    assert _in_a_fresh_interpreter(_ARENAS_AFTER_THREADS, "tuned") <= allocator.ARENAS


def test_held_tells_what_malloc_holds_where_it_can() -> None:
    before = allocator.held()
    if not GLIBC:
        assert before is None
        return
    assert before is not None and set(before) == {"in_use", "free", "mapped"}
    blocks = [bytearray(64 << 10) for _ in range(64)]  # 4 MiB in blocks malloc keeps
    during = allocator.held()
    assert during is not None
    assert (during["in_use"] + during["mapped"]) - (before["in_use"] + before["mapped"]) \
        >= 4 << 20
    del blocks
    after = allocator.held()
    assert after is not None and after["in_use"] + after["mapped"] < \
        during["in_use"] + during["mapped"] - (3 << 20)


def test_periodic_gives_back_at_most_once_every_interval() -> None:
    now = [100.0]
    trim = allocator.Periodic(every=60.0, clock=lambda: now[0])
    assert not trim.tick(), "not before its first interval"
    now[0] = 159.0
    assert not trim.tick()
    now[0] = 160.0
    assert trim.tick() == GLIBC, "due: given back where the allocator can"
    now[0] = 200.0
    assert not trim.tick(), "the interval counts from the last give-back"
    now[0] = 220.0
    assert trim.tick() == GLIBC
