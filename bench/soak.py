"""A soak: the daemon at work for a long while, writes, searches, remembers and syncs
side by side; its memory every few seconds, and nothing acknowledged lost.

    .venv/bin/python bench/soak.py [--memories 20000] [--minutes 30] [--append-only] [--keep]

A fresh root with a bare git repository on this machine as its remote is filled through
the socket (bench/search.py's pipelined fill). Then, for `--minutes`, on connections of
their own: a writer (WRITES a second: new notes until it has written OWN_NOTES, then in
turn a new note, an update of one of its notes and a delete of its oldest, so the store
stops growing; with `--append-only`, every write a new note and the store grows all
along), a searcher (memory_smart_search, one after another), a conversation
(memory_remember, a user's turn and an answer, TURNS a second, a new session every 20
turns) and a sync (memory_sync every SYNC_EVERY seconds). Every SAMPLE seconds the RSS
of the daemon and its children (bench/write_rss.py's reading: the vector store's process
and the model process, while they run) is taken, and every PARTS_EVERY seconds what the
daemon holds by part (`stats`'s `memory`: malloc's blocks in use, freed and kept,
mapped; the index's arrays; the embedder's cache). Printed: the curve a minute at a
time, those parts, its lowest and highest after the first five minutes and how far apart
they are (the goal: within 10%), smart search p50/p99 each five minutes, the counts, and
the acknowledged writes that are not as acknowledged after the end: a written or updated
memory that cannot be read back with its last content, a deleted one still readable (a
turn may be compressed away by design, so turns are counted, not read). Then the daemon
is started afresh on the store the soak left and searched RESTART_SEARCHES times: its
RSS beside the soaked daemon's is what the work itself left held. The embedder's variant
and the scoring path are named. The temporary root is removed at the end unless
`--keep`.
"""

from __future__ import annotations

import argparse
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.search import QUERIES, fill, models_named, note, p99, start  # noqa: E402
from bench.write_rss import rollup  # noqa: E402
from memoryd_client import Client  # noqa: E402

WRITES = 20.0  # a second
TURNS = 2.0  # a second
SYNC_EVERY = 60.0
OWN_NOTES = 1000  # the writer's notes it updates and deletes, once it has written them
SAMPLE = 10.0
SETTLE = 300.0  # the first five minutes are not held to the flat curve
PARTS_EVERY = 300.0  # seconds between two readings of what the daemon holds, by part
RESTART_SEARCHES = 300  # after a restart on the soak's store, before its RSS is read


def paced(rate: float, stop: threading.Event, act) -> None:
    """Call `act(n)` `rate` times a second until `stop` (late calls are not made up)."""
    started, n = time.monotonic(), 0
    while not stop.is_set():
        act(n)
        n += 1
        wait = started + n / rate - time.monotonic()
        if wait > 0:
            stop.wait(wait)


def query(n: int) -> str:
    """The soak's n-th smart search: every query new, none of them cached."""
    return f"{QUERIES[n % len(QUERIES)]} {n}"


def settled_after_restart(root: Path) -> dict[str, float]:
    """RSS of a daemon started afresh on the soak's store and searched as the soak
    searched: what the store itself costs, so that the soak's end less this is what its
    work left held (the store grew by its turns and what was learned from them)."""
    proc, _ = start(root)
    try:
        with Client(root / "memory.sock", timeout=600) as c:
            for n in range(RESTART_SEARCHES):
                c.call("memory_smart_search", {"query": query(n)})
        return rollup(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(300)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=20_000)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--append-only", action="store_true",
                        help="every write a new note: the store grows all along")
    parser.add_argument("--keep", action="store_true",
                        help="keep the root and its remote (printed) instead of removing them")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="md-soak-"))
    root, remote = work / "root", work / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    root.mkdir()
    (root / "config.yaml").write_text(f"git:\n  remote: {remote}\n")
    proc, _ = start(root)
    socket = root / "memory.sock"
    held: dict[str, str] = {}  # acknowledged and not deleted: id -> its last content
    deleted: list[str] = []
    steps = {"new": 0, "update": 0, "delete": 0}
    turns: list[str] = []
    searches: list[tuple[float, float]] = []  # (seconds into the soak, ms)
    syncs: list[str] = []
    errors: list[str] = []
    curve: list[tuple[float, dict[str, float]]] = []
    parts: list[tuple[float, dict[str, Any]]] = []  # (seconds in, `stats`'s memory)
    stop = threading.Event()
    try:
        with Client(socket, timeout=600) as c:
            rate = fill(c, args.memories)
            models = c.call("stats")["models"]
        began = time.monotonic()

        def writer() -> None:
            rng = random.Random(1)
            mine: list[str] = []  # the soak's own notes, oldest first
            with Client(socket, timeout=600) as client:
                def write(n: int) -> None:
                    step = ("new" if args.append_only or len(mine) < OWN_NOTES
                            else ("new", "update", "delete")[n % 3])
                    if step == "update":
                        memory_id = rng.choice(mine)
                        content = note(rng, args.memories + n)["content"]
                        client.call("memory_update", {"id": memory_id, "content": content})
                        held[memory_id] = content
                    elif step == "delete":
                        memory_id = mine.pop(0)
                        client.call("memory_delete", {"id": memory_id})
                        del held[memory_id]
                        deleted.append(memory_id)
                    else:
                        params = note(rng, args.memories + n)
                        memory_id = client.call("memory_write", params)["id"]
                        mine.append(memory_id)
                        held[memory_id] = params["content"]
                    steps[step] += 1
                paced(WRITES, stop, write)

        def searcher() -> None:
            with Client(socket, timeout=600) as client:
                n = 0
                while not stop.is_set():
                    t0 = time.perf_counter()
                    client.call("memory_smart_search", {"query": query(n)})
                    searches.append((time.monotonic() - began,
                                     (time.perf_counter() - t0) * 1000))
                    n += 1
                    stop.wait(0.05)

        def conversation() -> None:
            rng = random.Random(2)
            with Client(socket, timeout=600) as client:
                def turn(n: int) -> None:
                    role = "user" if n % 2 == 0 else "assistant"
                    said = (f"I moved the {rng.choice(QUERIES)} notes to folder {n}."
                            if role == "user" else f"Noted: folder {n} holds them now.")
                    turns.append(client.call("memory_remember", {
                        "session": f"soak-{n // 20}", "role": role, "content": said})["id"])
                paced(TURNS, stop, turn)

        def syncer() -> None:
            with Client(socket, timeout=600) as client:
                while not stop.wait(SYNC_EVERY):
                    got = client.call("memory_sync")
                    syncs.append("needs_you" if got.get("needs_you") else
                                 "ok" if got.get("went_out") is not None else "not reached")

        def guarded(fn):
            def run() -> None:
                try:
                    fn()
                except Exception as exc:  # the soak goes on; the error is printed
                    errors.append(f"{fn.__name__}: {type(exc).__name__}: {exc}")
            return run

        threads = [threading.Thread(target=guarded(fn), daemon=True)
                   for fn in (writer, searcher, conversation, syncer)]
        for t in threads:
            t.start()
        end = began + args.minutes * 60
        with Client(socket, timeout=600) as c:
            while (now := time.monotonic()) < end:
                curve.append((now - began, rollup(proc.pid)))
                if not parts or now - began - parts[-1][0] >= PARTS_EVERY - SAMPLE / 2:
                    parts.append((now - began, c.call("stats")["memory"]))
                time.sleep(min(SAMPLE, max(0.0, end - now)))
        stop.set()
        for t in threads:
            t.join(600)
        curve.append((time.monotonic() - began, rollup(proc.pid)))
        with Client(socket, timeout=600) as c:
            parts.append((time.monotonic() - began, c.call("stats")["memory"]))
            lost = []
            for memory_id, content in held.items():
                try:
                    if c.call("memory_read", {"id": memory_id})["content"] != content:
                        lost.append(memory_id)
                except Exception:  # counted as lost
                    lost.append(memory_id)
            for memory_id in deleted:
                try:
                    c.call("memory_read", {"id": memory_id})
                    lost.append(memory_id)  # a delete acknowledged and not done
                except Exception:
                    pass
            count = c.call("stats")["memories"]
    finally:
        stop.set()
        proc.send_signal(signal.SIGTERM)
        proc.wait(300)
    restarted = settled_after_restart(root)
    if args.keep:
        print(f"kept: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{args.memories} memories filled at {rate:.0f}/s; {models_named(models)}")
    print(f"{args.minutes:g} minutes: {sum(steps.values())} writes ({steps['new']} new, "
          f"{steps['update']} updates, {steps['delete']} deletes), "
          f"{len(turns)} turns remembered, "
          f"{len(searches)} smart searches, {len(syncs)} syncs ({syncs.count('ok')} with "
          f"nothing left to a person)")
    print("RSS (the daemon and its children; the children's share: the vector process,\n"
          "and the model process while writes stream in):")
    for at, mb in curve:
        if int(at) % 60 < SAMPLE or at == curve[-1][0]:
            print(f"  {at / 60:5.1f} min: {mb['rss']:.0f} MB (the children "
                  f"{mb['apart']:.0f})")
    print("what the daemon holds (its `stats`: MB; malloc's blocks in use, freed and kept,\n"
          "mapped on their own; the index's arrays; the embedder's vector cache):")
    for at, mb in parts:
        index = mb["index_mb"]
        held = mb["allocator_mb"] or {}
        print(f"  {at / 60:5.1f} min: daemon {mb.get('rss_mb', 0):.0f} (anonymous "
              f"{mb.get('anonymous_mb', 0):.0f}), malloc {held.get('in_use', 0):.0f} in use "
              f"/ {held.get('free', 0):.0f} free / {held.get('mapped', 0):.0f} mapped, index "
              f"{index['rows']:.0f} rows + {index['keywords']:.0f} keywords + "
              f"{index['entities'] + index['chunks'] + index['cells']:.0f} other, cache "
              f"{mb['embedder_cache']['mb']:.0f}, vector process "
              f"{mb['vectors_process_mb'] or 0:.0f}, model process "
              f"{mb.get('model_process_mb') or 0:.0f}")
    settled = [mb["rss"] for at, mb in curve if at >= SETTLE]
    if settled:
        low, high = min(settled), max(settled)
        print(f"after the first 5 minutes: lowest {low:.0f} MB, highest {high:.0f} MB, "
              f"{(high - low) / low:.1%} apart")
    # The daemon's own share: a restarted daemon that only searches starts no vector
    # process, and the soak's ends 20 s after its last vector.
    own = curve[-1][1]["rss"] - curve[-1][1]["apart"]
    again = restarted["rss"] - restarted["apart"]
    print(f"the daemon at the end {own:.0f} MB; the same store restarted, then "
          f"{RESTART_SEARCHES} smart searches: {again:.0f} MB; what the run's work left "
          f"held in the daemon: {own - again:.0f} MB")
    for start_s in range(0, int(args.minutes * 60), 300):
        window = [ms for at, ms in searches if start_s <= at < start_s + 300]
        if window:
            print(f"  smart search {start_s // 60:>2}-{start_s // 60 + 5} min: p50 "
                  f"{statistics.median(window):.1f} ms, p99 {p99(window):.1f} ms "
                  f"({len(window)})")
    print(f"memories at the end: {count} (turns and what was learned from them "
          "included)")
    print(f"acknowledged writes not as acknowledged after: {len(lost)} of "
          f"{len(held) + len(deleted)}")
    for error in errors:
        print(f"error: {error}")


if __name__ == "__main__":
    main()
