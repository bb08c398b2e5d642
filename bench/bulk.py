"""Bulk writes into a root of any size: the rate per 10,000 and what each write costs.

    .venv/bin/python bench/bulk.py --root ~/r100k --memories 100000
    .venv/bin/python bench/bulk.py --root ~/copy-of-130k --memories 10000

Starts memoryd on the root (new or already filled), writes `--memories` generated
notes with `bench/search.py`'s fill (pipelined `memory_write`, `--window` in flight,
topped up by half a window as replies come) and prints the rate of each 10,000, then
the whole run's rate, the daemon's CPU a write (its threads, and git's processes
apart), and how idle the machine was and how much of it the hypervisor took (steal).
On a shared machine the rate moves from run to run and day to day; CPU a write moves
less, so compare changes by it, on copies of one root, interleaved.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.search import fill, start  # noqa: E402
from memoryd_client import Client  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid: int) -> tuple[int, int]:
    """The process's own CPU (all threads) and its reaped children's (git), in ticks."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])


def machine_ticks() -> tuple[int, int, int]:
    """Idle (with I/O wait), steal and all CPU time of the machine, in ticks."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return values[3] + values[4], values[7], sum(values)


def per_10k(first: int, n: int) -> Callable[[int], None]:
    """`fill`'s progress: the rate of each 10,000 writes (and of the last, shorter run)."""
    mark = time.perf_counter()

    def progress(done: int) -> None:
        nonlocal mark
        if done % 10_000 == 0 or done == n:
            now = time.perf_counter()
            step = done % 10_000 or 10_000
            print(f"  {first + done:>9,} memories: {step / (now - mark):.0f}/s", flush=True)
            mark = now

    return progress


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--window", type=int, default=256, help="writes in flight")
    args = parser.parse_args()
    root = args.root.expanduser()
    proc, cold = start(root)
    try:
        with Client(root / "memory.sock", timeout=600) as client:
            first = client.call("stats")["memories"]
            print(f"{first:,} memories, started in {cold:.1f} s", flush=True)
            own0, git0 = cpu_ticks(proc.pid)
            idle0, steal0, all0 = machine_ticks()
            rate = fill(client, args.memories, args.window, first,
                        per_10k(first, args.memories))
            own1, git1 = cpu_ticks(proc.pid)
            idle1, steal1, all1 = machine_ticks()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(300)
    per_write = 1000 / TICK / args.memories
    spent = all1 - all0 or 1
    print(f"{args.memories:,} writes at {rate:.0f}/s | CPU a write: daemon "
          f"{(own1 - own0) * per_write:.2f} ms, git {(git1 - git0) * per_write:.2f} ms | "
          f"machine idle {100 * (idle1 - idle0) / spent:.0f}%, "
          f"steal {100 * (steal1 - steal0) / spent:.0f}%", flush=True)


if __name__ == "__main__":
    main()
