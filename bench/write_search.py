"""Smart searches while another connection writes: the searches' p50 and p99, run after
run, on a filled store, and where a slow one's time went.

    .venv/bin/python bench/write_search.py [--memories 100000] [--runs 5] [--searches 300]
        [--root DIR]

The writer is a process of its own, as a real one is: in the searcher's process its
Python would hold that process's GIL while a search's answer waits to be read, and
the wait would be counted as the daemon's.

A fresh temp root is filled through the socket (bench/search.py's pipelined fill). With
`--root`, that root is used and kept, and filled only when it holds no memory yet: to
compare two versions of the code on one filled root, run them in turn, A B A B (each
call leaves its runs' writes in it, about 6,000). A copy made with `cp -a` is not the
same root to the daemon: its start reads every file again, and its first git commit
hashes every file anew, which slows the first minute's writes. Then
each run: one connection pipelines writes the whole time (up to 64 in flight), another
asks `memory_smart_search` one query at a time (no query twice). Printed per run: the
searches' p50 and p99 and the writes a second meanwhile. A last run asks
`memory_explain` instead (smart search's ranking, with each stage's time): for the
searches over 30 ms it prints how much was the stages and how much was waiting before
or between them (the event loop busy with a write's reply, the writer thread, a lock),
and which stage was the longest. The embedder's variant and the scoring path are named.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import signal
import statistics
import sys
import tempfile
import time
from multiprocessing.sharedctypes import Synchronized
from pathlib import Path
from typing import Protocol

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.search import QUERIES, fill, models_named, note, p99, start  # noqa: E402
from memoryd_client import Client  # noqa: E402


class Stop(Protocol):
    def is_set(self) -> bool: ...


WINDOW = 64
SLOW_MS = 30.0


def writer(socket: Path, stop: Stop, first: int, counted: Synchronized[int]) -> None:
    """Pipelined writes until `stop`; the count of those answered goes in `counted`."""
    rng = random.Random(first)
    with Client(socket, timeout=600) as client:
        sent = done = 0

        def send(count: int) -> None:
            nonlocal sent
            lines = [json.dumps({"id": sent + k, "method": "memory_write",
                                 "params": note(rng, first + sent + k)}).encode() + b"\n"
                     for k in range(count)]
            client._sock.sendall(b"".join(lines))
            sent += count

        send(WINDOW)
        while done < sent:
            client.read_message()
            done += 1
            if not stop.is_set() and sent - done <= WINDOW // 2:
                send(WINDOW // 2)
        counted.value = done


def run(socket: Path, method: str, searches: int, first: int, offset: int
        ) -> tuple[list[float], list[dict], float]:
    """`searches` of `method` while a writer writes: each one's ms, each answer (for
    explain), writes a second."""
    spawn = multiprocessing.get_context("spawn")
    stop, counted = spawn.Event(), spawn.Value("q", 0)
    process = spawn.Process(target=writer, args=(socket, stop, first, counted))
    process.start()
    time.sleep(1.0)  # the writer under way
    times, answers = [], []
    started = time.perf_counter()
    with Client(socket, timeout=600) as client:
        for i in range(searches):
            query = f"{QUERIES[(i + offset) % len(QUERIES)]} {offset + i}"
            t0 = time.perf_counter()
            answer = client.call(method, {"query": query})
            times.append((time.perf_counter() - t0) * 1000)
            answers.append(answer)
    took = time.perf_counter() - started
    stop.set()
    process.join()
    return times, answers, counted.value / took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--root", type=Path, help="a root to use and keep")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mdw-") as tmp:
        root = args.root.expanduser() if args.root else Path(tmp) / "root"
        proc, _ = start(root)
        socket = root / "memory.sock"
        try:
            with Client(socket, timeout=600) as client:
                held = client.call("stats")["memories"]
                if held:
                    print(f"{held} memories in {root}", end="; ")
                else:
                    rate = fill(client, args.memories)
                    print(f"{args.memories} memories written at {rate:.0f}/s", end="; ")
                models = client.call("stats")["models"]
            print(models_named(models), flush=True)
            first = max(held, args.memories)
            for n in range(args.runs):
                times, _, writes = run(socket, "memory_smart_search", args.searches,
                                       first + 10_000_000 * (n + 1), n * args.searches)
                print(f"run {n + 1}: smart search p50 {statistics.median(times):.1f} ms, "
                      f"p99 {p99(times):.1f} ms, max {max(times):.1f} ms; "
                      f"{writes:.0f} writes/s meanwhile", flush=True)
            times, answers, writes = run(socket, "memory_explain", args.searches,
                                         first + 90_000_000, args.runs * args.searches)
            slow = [(ms, a["timings_ms"]) for ms, a in zip(times, answers, strict=True)
                    if ms > SLOW_MS]
            print(f"traced run (memory_explain): p50 {statistics.median(times):.1f} ms, "
                  f"p99 {p99(times):.1f} ms; {len(slow)} over {SLOW_MS:.0f} ms")
            for ms, stages in sorted(slow, reverse=True)[:10]:
                inside = sum(stages.values())
                longest = max(stages, key=lambda s: stages[s])
                print(f"  {ms:6.1f} ms: stages {inside:5.1f} ms (longest {longest} "
                      f"{stages[longest]:.1f}), waiting {ms - inside:5.1f} ms")
            with Client(socket, timeout=600) as client:
                apart = client.call("stats")["models"]["embedder"].get("apart")
            if apart is not None:
                print(f"model process: {apart['calls']} model calls, {apart['declined']} "
                      f"left to the daemon (its queue full, or it starved), "
                      f"{apart['late']} texts made by the daemon after waiting for it, "
                      f"{apart['starts']} starts, {apart['lost']} lost")
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(300)


if __name__ == "__main__":
    main()
