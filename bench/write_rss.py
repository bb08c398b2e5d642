"""Memory after writes: a store filled through the socket, then searched with writes
between the searches, then left alone; the daemon's RSS at each step and every 5 s of
the quiet minute after the last write, without a restart: the daemon's and its
children's (the vector store's process and the model process, while they run), and
their share.

    .venv/bin/python bench/write_rss.py [--memories 100000] [--searches 300]

The fill is bench/search.py's (pipelined memory_write, generated notes). Then, on one
connection, each smart search follows a write (as an agent that remembers and asks).
Printed: the fill's rate, RSS after it, smart search p50/p99 with the writes between,
and the RSS curve of the quiet minute, each point split into what the process has
mapped from files and what it allocated (smaps_rollup: `Rss` = file + anonymous); the
embedder's variant and the scoring path are named. The daemon ends the vector store's
process RELEASE_AFTER seconds after the last vector written (server/daemon.py) and
gives the allocator's free memory back.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.search import QUERIES, fill, models_named, note, p99, start  # noqa: E402
from memoryd_client import Client  # noqa: E402

QUIET = 60.0  # seconds watched after the last write
EVERY = 5.0


def rollup(pid: int) -> dict[str, float]:
    """MB of resident memory of the daemon and its children (the vector process, while
    it runs): all, file-backed, anonymous, and the children's share."""
    own = _rollup(pid)
    kids = [_rollup(kid) for kid in _children(pid)]
    total = {key: own[key] + sum(k[key] for k in kids) for key in own}
    return {**total, "apart": sum(k["rss"] for k in kids)}


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            found += [int(x) for x in (task / "children").read_text().split()]
    return found


def _rollup(pid: int) -> dict[str, float]:
    kb: dict[str, int] = {}
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:  # a child that ended since it was listed
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if value.strip().endswith("kB"):
            kb[key.strip()] = int(value.split()[0])
    return {"rss": kb.get("Rss", 0) / 1024, "anon": kb.get("Anonymous", 0) / 1024,
            "file": (kb.get("Rss", 0) - kb.get("Anonymous", 0)) / 1024}


def shown(mb: dict[str, float]) -> str:
    return (f"{mb['rss']:.0f} MB (anonymous {mb['anon']:.0f}, files {mb['file']:.0f}; "
            f"the vector process {mb['apart']:.0f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--searches", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mdr-") as tmp:
        root = Path(tmp) / "root"
        proc, _ = start(root)
        try:
            with Client(root / "memory.sock", timeout=600) as c:
                started = rollup(proc.pid)
                rate = fill(c, args.memories)
                filled = rollup(proc.pid)
                rng, samples = random.Random(7), []
                for i in range(args.searches):
                    c.call("memory_write", note(rng, args.memories + i))
                    query = QUERIES[i % len(QUERIES)] + f" {i}"
                    t0 = time.perf_counter()
                    c.call("memory_smart_search", {"query": query})
                    samples.append((time.perf_counter() - t0) * 1000)
                last_write = time.monotonic()
                mixed = rollup(proc.pid)
                models = c.call("stats")["models"]
                curve = []
                while (waited := time.monotonic() - last_write) < QUIET:
                    time.sleep(EVERY - waited % EVERY)
                    curve.append((round(time.monotonic() - last_write), rollup(proc.pid)))
                after = rollup(proc.pid)
                c.call("memory_smart_search", {"query": "after the quiet minute"})
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(300)
    print(f"{args.memories} memories written at {rate:.0f}/s; {models_named(models)}")
    print(f"RSS at start {shown(started)}")
    print(f"RSS after the fill {shown(filled)}")
    print(f"{args.searches} smart searches, each after a write: p50 "
          f"{statistics.median(samples):.1f} ms, p99 {p99(samples):.1f} ms; RSS {shown(mixed)}")
    for seconds, mb in curve:
        print(f"  {seconds:>3} s after the last write: {shown(mb)}")
    peak = max([filled["rss"], mixed["rss"], *(m["rss"] for _, m in curve)])
    print(f"RSS a minute after the last write {shown(after)} (the highest seen {peak:.0f} MB)")


if __name__ == "__main__":
    main()
