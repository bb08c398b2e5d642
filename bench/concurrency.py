"""Smart searches from 1, 2, 4 and 8 connections at once: throughput and latency.

    .venv/bin/python bench/concurrency.py [--memories 10000] [--queries 200]
    .venv/bin/python bench/concurrency.py --root ~/big-root     # a filled root, kept
    .venv/bin/python bench/concurrency.py --root ~/big-root --daemons 2

Each connection is a thread with its own socket that sends one memory_smart_search
at a time (no pipelining), as separate agents do; no query is sent twice, so each is
embedded (see RUNS). A fresh temp root is filled with bench/search.py's generated notes
unless --root names one. 200 searches warm the daemon up, and nothing is measured until
the daemon has had no child process for 2 s: on a copy of a root, start-up's `git add -A`
hashes every file again (18 s of a core at 100,000), which took a core from the first
rows. Each row gives how idle the machine was and the hypervisor's steal.

`--daemons N` measures what scoring in separate processes could give at best: N daemons,
each on its own copy of the root (`cp -a`, in a temp folder), with the connections dealt
out in turn (the first row, one connection, is one daemon's). No GIL, lock or cache is
shared between them; they share only the cores.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.bulk import machine_ticks  # noqa: E402
from bench.search import QUERIES, fill, p99, start  # noqa: E402
from memoryd_client import Client  # noqa: E402

WARM_UP = 200  # smart searches before measuring
QUIET = 2.0  # seconds without a child process of the daemon before measuring
# Each run's queries carry its own number: a query a daemon has seen comes out of its
# embedding cache, which made searches that repeated the warm-up's cheaper (the first
# row's all of them, the 8-connection row's a quarter) and so lowered every "vs 1".
RUNS = itertools.count()


def children(pid: int) -> list[str]:
    """The daemon's child processes (git, the catch-up's comparison), from any thread."""
    found: list[str] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            found += (task / "children").read_text().split()
    return found


def settle(pid: int, limit: float = 300.0) -> float:
    """Wait until the daemon has had no child process for QUIET seconds (at most
    `limit`); the seconds waited."""
    t0 = quiet_since = time.perf_counter()
    while time.perf_counter() - t0 < limit:
        if children(pid):
            quiet_since = time.perf_counter()
        elif time.perf_counter() - quiet_since >= QUIET:
            break
        time.sleep(0.1)
    return time.perf_counter() - t0


def run(sockets: list[Path], connections: int, queries: int) -> tuple[float, float, float]:
    """(queries/s over all connections, p50 ms, p99 ms); connection k uses
    `sockets[k % len(sockets)]`."""
    samples: list[float] = []
    run_number = next(RUNS)
    lock = threading.Lock()
    barrier = threading.Barrier(connections + 1)

    def agent(k: int) -> None:
        mine = []
        with Client(sockets[k % len(sockets)], timeout=600) as c:
            c.call("health")
            barrier.wait()
            for i in range(queries):
                query = f"{QUERIES[(i + k) % len(QUERIES)]} {run_number}-{k}-{i}"
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
    return len(samples) / elapsed, statistics.median(samples), p99(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10000)
    parser.add_argument("--queries", type=int, default=200, help="per connection")
    parser.add_argument("--root", type=Path, help="a filled root to use (kept as it is)")
    parser.add_argument("--daemons", type=int, default=1,
                        help="spread the connections over this many daemons, each on a "
                             "copy of the root (the bound for scoring in processes)")
    args = parser.parse_args()
    if args.daemons < 1:
        parser.error("--daemons must be 1 or more")
    with tempfile.TemporaryDirectory(prefix="mdc-") as tmp:
        root = args.root or Path(tmp) / "root"
        if args.root is None:
            proc, _ = start(root)
            try:
                with Client(root / "memory.sock", timeout=600) as c:
                    fill(c, args.memories)
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(300)
        roots = [root]
        for k in range(1, args.daemons):
            roots.append(Path(tmp) / f"copy-{k}")
            print(f"copying {root} to {roots[-1]}", flush=True)
            subprocess.run(["cp", "-a", str(root), str(roots[-1])], check=True)
        procs: list[subprocess.Popen[bytes]] = []
        try:
            for r in roots:
                procs.append(start(r)[0])
            measure([r / "memory.sock" for r in roots], [p.pid for p in procs], args.queries)
        finally:
            for p in procs:
                p.send_signal(signal.SIGTERM)
            for p in procs:
                p.wait(300)


def measure(sockets: list[Path], pids: list[int], queries: int) -> None:
    """Warm every daemon up, wait for their child processes, then the table."""
    with Client(sockets[0], timeout=600) as c:
        memories = c.call("stats")["memories"]
    # Warm up first: right after a start the daemon still finishes start-up's
    # background work (the catch-up listing, the first reads of the snapshot's
    # pages), which slowed the first row and so raised every "vs 1" (a 130,000
    # root: 65/s cold against 90-150/s warm at one connection).
    for socket in sockets:
        run([socket], 1, WARM_UP)
        run([socket], 8, WARM_UP // 8)
    waited = sum(settle(pid) for pid in pids)
    daemons = f" over {len(sockets)} daemons" if len(sockets) > 1 else ""
    print(f"{memories} memories; {queries} smart searches per connection{daemons} "
          f"(waited {waited:.1f} s for the daemons' child processes)")
    print("| connections | throughput | vs 1 | p50 | p99 | machine idle | steal |")
    print("|---|---|---|---|---|---|---|")
    base = None
    for n in (1, 2, 4, 8):
        idle0, steal0, all0 = machine_ticks()
        rate, p50, p99 = run(sockets, n, queries)
        idle1, steal1, all1 = machine_ticks()
        base = base or rate
        total = max(1, all1 - all0)
        print(f"| {n} | {rate:.0f} /s | {rate / base:.2f}x | {p50:.1f} ms | {p99:.1f} ms "
              f"| {100 * (idle1 - idle0) / total:.0f}% "
              f"| {100 * (steal1 - steal0) / total:.0f}% |", flush=True)


if __name__ == "__main__":
    main()
