"""Smart searches while another connection writes: the searches' p50 and p99, run after
run, on a filled store, and where a slow one's time went.

    .venv/bin/python bench/write_search.py [--memories 100000] [--runs 5] [--searches 300]

A fresh temp root is filled through the socket (bench/search.py's pipelined fill). Then
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
import random
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.search import QUERIES, fill, models_named, note, p99, start  # noqa: E402
from memoryd_client import Client  # noqa: E402

WINDOW = 64
SLOW_MS = 30.0


def writer(socket: Path, stop: threading.Event, first: int, counted: list[int]) -> None:
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
        counted.append(done)


def run(socket: Path, method: str, searches: int, first: int, offset: int
        ) -> tuple[list[float], list[dict], float]:
    """`searches` of `method` while a writer writes: each one's ms, each answer (for
    explain), writes a second."""
    stop, counted = threading.Event(), []
    thread = threading.Thread(target=writer, args=(socket, stop, first, counted))
    thread.start()
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
    thread.join()
    return times, answers, (counted[0] if counted else 0) / took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--searches", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mdw-") as tmp:
        root = Path(tmp) / "root"
        proc, _ = start(root)
        socket = root / "memory.sock"
        try:
            with Client(socket, timeout=600) as client:
                rate = fill(client, args.memories)
                models = client.call("stats")["models"]
            print(f"{args.memories} memories written at {rate:.0f}/s; {models_named(models)}",
                  flush=True)
            first = args.memories
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
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(300)


if __name__ == "__main__":
    main()
