"""Search latency at 1k / 10k / 100k memories, through the socket of a real daemon.

    .venv/bin/python bench/search.py [--sizes 1000,10000,100000] [--queries 200]
    .venv/bin/python bench/search.py --root ~/filled-root    # measure a kept root as it is
    MEMORYD_SCORING=float .venv/bin/python bench/search.py   # the exact float path forced

For each size: a fresh temp root is filled with generated notes of realistic text
(pipelined memory_write through the socket; memories/s reported), then p50/p99
over the socket of memory_search, memory_smart_search, memory_recall and
memory_list (newest 20), the
daemon's RSS, and the cold start (a restart on the filled root to its first
smart search answer): once with the files still in the page cache, and once as after a
reboot, with the root's and the installation's files dropped from it (pagecache.py).
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.pagecache import evict, installation  # noqa: E402
from memoryd_client import Client, DaemonUnavailable  # noqa: E402

PEOPLE = ["Anne", "Ravi", "Mei", "Jonas", "Fatima", "Diego", "Olga", "Kenji", "Amara", "Luca"]
PLACES = ["Lisbon", "Osaka", "Berlin", "Nairobi", "Quito", "Oslo", "Hanoi", "Austin", "Porto"]
TOPICS = ["the Postgres migration", "the billing service", "the mobile release", "the offsite",
          "the hiring plan", "the search ranking", "the data pipeline", "the security audit",
          "the onboarding flow", "the pricing page", "the incident review", "the API gateway"]
VERBS = ["prefers", "decided on", "asked about", "is worried about", "finished", "postponed",
         "wants to revisit", "learned something new about", "presented", "reviewed"]
DETAILS = ["before the end of the quarter", "after the Tuesday standup", "with the new vendor",
           "because latency doubled", "to cut costs by a third", "using feature flags",
           "with a rollback plan", "once the tests are green", "in two smaller steps",
           "after talking to support", "without downtime", "for the European customers"]
CATEGORIES = ["people", "project", "knowledge", "decisions", "preferences", "lessons",
              "habits", "skills", "feedback"]
QUERIES = ["what did we decide about the Postgres migration", "who is worried about latency",
           "Anne and the billing service", "plans for the mobile release", "offsite in Lisbon",
           "security audit findings", "how to roll back the API gateway",
           "pricing page changes for Europe", "what does Ravi prefer", "incident review notes"]


def note(rng: random.Random, i: int) -> dict:
    who, topic = rng.choice(PEOPLE), rng.choice(TOPICS)
    text = (f"{who} {rng.choice(VERBS)} {topic} {rng.choice(DETAILS)}; "
            f"follow-up in {rng.choice(PLACES)} ({i}).")
    return {"content": text, "category": rng.choice(CATEGORIES),
            "tags": [topic.split()[-1], who.lower()], "importance": round(rng.random(), 2)}


def start(root: Path) -> tuple[subprocess.Popen[bytes], float]:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "memoryd", "serve", "--root", str(root),
                             "--log-level", "warning"], stderr=subprocess.DEVNULL)
    while True:
        try:
            with Client(root / "memory.sock", timeout=600, retries=0) as c:
                if c.call("health")["status"] == "ok":
                    c.call("memory_smart_search", {"query": "warm up"})
                    return proc, time.perf_counter() - t0
        except (DaemonUnavailable, OSError):
            if proc.poll() is not None:
                raise SystemExit("memoryd exited") from None
        time.sleep(0.05)  # not up, or still starting: asking in a tight loop slows it


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def fill(client: Client, n: int, window: int = 256, first: int = 0,
         progress: Callable[[int], None] | None = None) -> float:
    """Pipelined writes: up to `window` in flight, topped up by half a window as replies
    come (a bulk writer that keeps the daemon busy, not one that waits for each batch).
    The notes are numbered from `first` (a root that holds that many already).
    `progress(done)` follows each reply; by default a line every 30 s."""
    rng = random.Random(first + n)
    t0 = last = time.perf_counter()
    sent = done = 0

    def every_30_s(done: int) -> None:
        nonlocal last
        if time.perf_counter() - last > 30:
            print(f"  ... {done}/{n} written ({done / (time.perf_counter() - t0):.0f}/s)",
                  flush=True)
            last = time.perf_counter()

    def send(count: int) -> None:
        nonlocal sent
        batch = [note(rng, first + i) for i in range(sent, min(n, sent + count))]
        client._sock.sendall(b"".join(
            json.dumps({"id": sent + k, "method": "memory_write", "params": p}).encode() + b"\n"
            for k, p in enumerate(batch)))
        sent += len(batch)

    send(window)
    while done < n:
        reply = client.read_message()
        if "error" in reply:
            raise SystemExit(f"write failed: {reply['error']}")
        done += 1
        if sent < n and sent - done <= window // 2:
            send(window // 2)
        (progress or every_30_s)(done)
    return n / (time.perf_counter() - t0)


def models_named(models: dict) -> str:
    """What `stats`' `models` says ran: the embedder's variant, where a write's model
    calls run, and the scoring path."""
    scoring = models["scoring"]
    apart = models["embedder"].get("apart")
    where = ("a write's model calls in the daemon" if apart is None else
             f"a write's model calls in the model process ({apart['state']})")
    return (f"embedder {models['embedder'].get('variant')}, {where}, vectors scored on "
            f"the {scoring['path']} path ({scoring['why']})")


def p99(samples: list[float]) -> float:
    """The 99th percentile as these benches report it: the sample at 0.99 of the count."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def latency(client: Client, method: str, make, queries: int) -> tuple[float, float]:
    samples = []
    for i in range(queries):
        params = make(QUERIES[i % len(QUERIES)] + ("" if i < len(QUERIES) else f" {i}"))
        t0 = time.perf_counter()
        client.call(method, params)
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples), p99(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--root", type=Path,
                        help="a filled root: no fill, its cold start and latencies only")
    args = parser.parse_args()
    for n in [0] if args.root else (int(x) for x in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="mds-") as tmp:
            root = args.root or Path(tmp) / "root"
            rate = 0.0
            if not args.root:
                proc, _ = start(root)
                with Client(root / "memory.sock", timeout=600) as c:
                    rate = fill(c, n)
                proc.send_signal(signal.SIGTERM)
                proc.wait(300)
            proc, cold = start(root)  # cold start on the filled root
            with Client(root / "memory.sock", timeout=600) as c:
                stats = c.call("stats")
                n, scoring = stats["memories"], stats["models"]["scoring"]
            with Client(root / "memory.sock", timeout=600) as c:
                exact = latency(c, "memory_search", lambda q: {"query": q.split()[-1]},
                                args.queries)
                smart = latency(c, "memory_smart_search", lambda q: {"query": q},
                                args.queries)
                # the same few queries again: their embeddings come from the hot cache
                hot = latency(c, "memory_smart_search",
                              lambda q: {"query": QUERIES[hash(q) % 3]}, args.queries)
                # worded apart from the smart searches', which the embedding cache holds
                recall = latency(c, "memory_recall", lambda q: {"query": f"recall: {q}"},
                                 args.queries)
                listing = latency(c, "memory_list", lambda q: {"limit": 20}, args.queries)
            rss = rss_mb(proc.pid)
            proc.send_signal(signal.SIGTERM)
            proc.wait(300)
            evict([root, *installation()])
            proc, reboot = start(root)
            proc.send_signal(signal.SIGTERM)
            proc.wait(300)
        print(f"{n:>7} memories: write {rate:.0f}/s | search p50 {exact[0]:.2f} p99 {exact[1]:.2f}"
              f" ms | smart p50 {smart[0]:.2f} p99 {smart[1]:.2f} ms (repeated queries p50 "
              f"{hot[0]:.2f} p99 {hot[1]:.2f}) | recall p50 {recall[0]:.2f} p99 {recall[1]:.2f}"
              f" ms | list p50 {listing[0]:.2f} p99 {listing[1]:.2f} ms | RSS {rss:.0f} MB"
              f" | cold start {cold:.1f} s ({reboot:.1f} s with the page cache emptied)"
              f" | vectors scored on the {scoring['path']} path ({scoring['why']})",
              flush=True)


if __name__ == "__main__":
    main()
