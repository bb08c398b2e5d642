"""Smart searches from 1, 2, 4 and 8 connections at once: throughput and latency.

    .venv/bin/python bench/concurrency.py [--memories 10000] [--queries 200]
    .venv/bin/python bench/concurrency.py --root ~/big-root     # a filled root, kept

Each connection is a thread with its own socket that sends one memory_smart_search
at a time (no pipelining), as separate agents do. A fresh temp root is filled with
bench/search.py's generated notes unless --root names one. 200 searches warm the daemon
up before anything is measured.
"""

from __future__ import annotations

import argparse
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.search import QUERIES, fill, start  # noqa: E402
from memoryd_client import Client  # noqa: E402

WARM_UP = 200  # smart searches before measuring


def run(socket: Path, connections: int, queries: int) -> tuple[float, float, float]:
    """(queries/s over all connections, p50 ms, p99 ms)."""
    samples: list[float] = []
    lock = threading.Lock()
    barrier = threading.Barrier(connections + 1)

    def agent(k: int) -> None:
        mine = []
        with Client(socket, timeout=600) as c:
            c.call("health")
            barrier.wait()
            for i in range(queries):
                query = f"{QUERIES[(i + k) % len(QUERIES)]} {k}-{i}"
                t0 = time.perf_counter()
                c.call("memory_smart_search", {"query": query})
                mine.append((time.perf_counter() - t0) * 1000)
        with lock:
            samples.extend(mine)

    threads = [threading.Thread(target=agent, args=(k,)) for k in range(connections)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    samples.sort()
    return (len(samples) / elapsed, statistics.median(samples),
            samples[min(len(samples) - 1, int(0.99 * len(samples)))])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10000)
    parser.add_argument("--queries", type=int, default=200, help="per connection")
    parser.add_argument("--root", type=Path, help="a filled root to use (kept as it is)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mdc-") as tmp:
        root = args.root or Path(tmp) / "root"
        proc, _ = start(root)
        try:
            if args.root is None:
                with Client(root / "memory.sock", timeout=600) as c:
                    fill(c, args.memories)
            with Client(root / "memory.sock", timeout=600) as c:
                memories = c.call("stats")["memories"]
            # Warm up first: right after a start the daemon still finishes start-up's
            # background work (the catch-up listing, the first reads of the snapshot's
            # pages), which slowed the first row and so raised every "vs 1" (a 130,000
            # root: 65/s cold against 90-150/s warm at one connection).
            run(root / "memory.sock", 1, WARM_UP)
            run(root / "memory.sock", 8, WARM_UP // 8)
            print(f"{memories} memories; {args.queries} smart searches per connection")
            print("| connections | throughput | vs 1 | p50 | p99 |")
            print("|---|---|---|---|---|")
            base = None
            for n in (1, 2, 4, 8):
                rate, p50, p99 = run(root / "memory.sock", n, args.queries)
                base = base or rate
                print(f"| {n} | {rate:.0f} /s | {rate / base:.2f}x | {p50:.1f} ms | {p99:.1f} ms |",
                      flush=True)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(300)


if __name__ == "__main__":
    main()
