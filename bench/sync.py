"""Sync at scale: 1,000 changes from another machine into a root of N memories, with
the receiving daemon serving smart searches all the while.

    .venv/bin/python bench/sync.py --memories 100000 --changes 1000

The receiver is a root of N generated notes (bench/fill.py's), indexed, under git,
pushed to a bare repository on this machine. The other machine is a plain clone of it
that changes half of the changes' memories (a new text, version + 1, as memoryd writes
an update) and adds the other half as new notes, in one commit, pushed. Then the
receiver syncs while a client runs smart searches back to back. It prints how long the
sync took, when the last new memory could be found by a search (from the sync's start),
and the smart-search latency before and during the sync (p50, p99, max).
"""

from __future__ import annotations

import argparse
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.fill import generated, write_files  # noqa: E402
from bench.protocol import pct, start_daemon  # noqa: E402
from memoryd.schema import content_hash  # noqa: E402
from memoryd.store import frontmatter  # noqa: E402
from memoryd.store.files import MarkdownStore  # noqa: E402
from memoryd_client import Client  # noqa: E402

QUERIES = ["where does the harbour ferry leave from", "notes about the release plan",
           "what did we decide about the database", "who prefers tea in the morning"]


def run(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True).stdout


def git(root: Path, *args: str) -> str:
    return run("git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", *args,
               cwd=root)


def searches(sock: Path, stop: threading.Event, out: list[tuple[float, float]]) -> None:
    """Smart searches back to back: (when it started, how long it took)."""
    with Client(sock, retries=0, timeout=120) as c:
        i = 0
        while not stop.is_set():
            started = time.perf_counter()
            c.call("memory_smart_search", {"query": QUERIES[i % len(QUERIES)], "top_k": 10})
            out.append((started, time.perf_counter() - started))
            i += 1


def changed_files(clone: Path, n: int, changes: int) -> list[str]:
    """Half of `changes` existing notes get a new text; half are new notes. Returns a
    unique word of each new text, to search for."""
    rng = random.Random(7)
    files = sorted((clone / "categories").rglob("*.md"))
    words = []
    for k, path in enumerate(rng.sample(files, changes // 2)):
        memory = frontmatter.parse(path.read_text(), path.stem).memory
        word = f"zqchanged{k}"
        memory.content = f"{memory.content} Updated elsewhere: {word}."
        memory.content_hash, memory.version = content_hash(memory.content), memory.version + 1
        path.write_bytes(frontmatter.render(memory))
        words.append(word)
    store = MarkdownStore(clone)
    for k in range(changes - changes // 2):
        memory = generated(rng, n + k)
        word = f"zqadded{k}"
        memory.content = f"{memory.content} Written elsewhere: {word}."
        memory.content_hash = content_hash(memory.content)
        (clone / store.relpath_for(memory)).write_bytes(frontmatter.render(memory))
        words.append(word)
    return words


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--memories", type=int, default=100_000)
    ap.add_argument("--changes", type=int, default=1000)
    ap.add_argument("--keep", action="store_true", help="keep the roots")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="md-sync-"))
    root, remote, clone = work / "root", work / "remote.git", work / "elsewhere"
    try:
        run("git", "init", "-q", "--bare", str(remote))
        t = time.perf_counter()
        write_files(root, args.memories)
        (root / "config.yaml").write_text(
            f"git:\n  remote: {remote}\njobs:\n  enabled: false\n")
        run(sys.executable, "-m", "memoryd", "reindex", "--root", str(root))
        print(f"root of {args.memories} notes indexed in {time.perf_counter() - t:.0f} s")
        daemon = start_daemon(root)
        try:
            with Client(root / "memory.sock", retries=0, timeout=3600) as c:
                t = time.perf_counter()
                first = c.call("memory_sync")
                assert first["error"] is None, first
                print(f"first sync (commit and push of every file): "
                      f"{time.perf_counter() - t:.0f} s")
            run("git", "clone", "-q", "--branch", "main", str(remote), str(clone))
            words = changed_files(clone, args.memories, args.changes)
            git(clone, "add", "-A")
            git(clone, "commit", "-qm", f"{args.changes} changes elsewhere")
            git(clone, "push", "-q", "origin", "HEAD:main")
            print(f"{args.changes} changes pushed from another clone "
                  f"({len(words) // 2} updates, {len(words) - len(words) // 2} new notes)")
            measure(root / "memory.sock", words)
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(300)
    finally:
        if args.keep:
            print(f"kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def measure(sock: Path, words: list[str]) -> None:
    timings: list[tuple[float, float]] = []
    stop = threading.Event()
    searcher = threading.Thread(target=searches, args=(sock, stop, timings))
    searcher.start()
    time.sleep(20)  # the latency before
    before = [took for _, took in timings]
    with Client(sock, retries=0, timeout=3600) as c:
        started = time.perf_counter()
        result = c.call("memory_sync")
        synced = time.perf_counter()
        assert result["error"] is None, result
        last = words[-1]
        while not c.call("memory_search", {"query": last})["total"]:
            time.sleep(0.01)
        found = time.perf_counter()
        missing = [w for w in words if not c.call("memory_search", {"query": w})["total"]]
        scoring = c.call("stats")["models"]["scoring"]
    stop.set()
    searcher.join()
    print(f"vectors scored on the {scoring['path']} path ({scoring['why']})")
    during = [took for at, took in timings if started <= at <= synced]
    print(f"sync: {synced - started:.2f} s, came in {result['came_in']} files; the last new "
          f"text found by a search {found - started:.2f} s after the sync began; "
          f"not found: {len(missing)}; steps (ms): {result.get('timings_ms')}")
    for name, values in (("before", before), ("during", during)):
        if values:
            print(f"smart search {name} the sync: {len(values)} searches, "
                  f"p50 {pct(values, 50) * 1000:.1f} ms, p99 {pct(values, 99) * 1000:.1f} ms, "
                  f"max {max(values) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
