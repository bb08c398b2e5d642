"""`memory_write` one at a time while other programs keep every core busy: what a write
costs when the model process (models/apart.py, in the kernel's idle class) gets no
core, against every model call in the daemon (`embedder.apart: false`).

    .venv/bin/python bench/busy_write.py [--writes 200] [--busy N (default: the cores)]

A fresh root a way, each with its own daemon; the busy programs are plain Python loops
at the default priority, started once a stream of writes has started the daemon's
processes (the vector store's, the model's) and every vector is persisted. Printed a
way: p50 / p99 / max of the writes' round trips, and what the model process did.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.search import note, p99, start  # noqa: E402
from memoryd_client import Client  # noqa: E402


def busy(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(count)]


def warm_up(client: Client, rng: random.Random, apart: bool) -> None:
    """Both ways alike: a stream of writes (it starts the model process), then until
    the vector store holds every vector (its process is up, nothing waits to persist)."""
    deadline, first = time.monotonic() + 120, 0
    while time.monotonic() < deadline:
        first += 1
        client.call("memory_write", note(rng, -first))
        stats = client.call("stats")
        running = not apart or stats["models"]["embedder"]["apart"]["state"] == "on"
        if first >= 64 and running and not stats["index"]["unpersisted"]:
            return
    raise SystemExit("the daemon did not settle in 120 s")


def one_way(apart: bool, writes: int, spinners: int) -> str:
    with tempfile.TemporaryDirectory(prefix="mdb-") as tmp:
        root = Path(tmp) / "root"
        root.mkdir()
        (root / "config.yaml").write_text(f"embedder:\n  apart: {str(apart).lower()}\n")
        proc, _ = start(root)
        loops: list[subprocess.Popen[bytes]] = []
        try:
            with Client(root / "memory.sock", timeout=600) as client:
                rng = random.Random(7)
                warm_up(client, rng, apart)
                loops = busy(spinners)
                took = []
                for n in range(1, writes + 1):
                    t0 = time.perf_counter()
                    client.call("memory_write", note(rng, n))
                    took.append((time.perf_counter() - t0) * 1000)
                described = client.call("stats")["models"]["embedder"].get("apart")
        finally:
            for loop in loops:
                loop.kill()
                loop.wait()
            proc.send_signal(signal.SIGTERM)
            proc.wait(300)
    line = (f"p50 {statistics.median(took):.1f} ms, p99 {p99(took):.1f} ms, "
            f"max {max(took):.1f} ms")
    if described is not None:
        line += (f"; model process {described['state']}: {described['calls']} calls, "
                 f"{described['late']} texts made by the daemon instead")
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--busy", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    print(f"{args.writes} writes one at a time, {args.busy} busy loops beside them")
    for apart in (False, True):
        way = "the model process" if apart else "every model call in the daemon"
        print(f"{way}: {one_way(apart, args.writes, args.busy)}", flush=True)


if __name__ == "__main__":
    main()
