"""kill -9 rounds: a real daemon with git committing every second, writers on five
kinds of call, then the whole process group killed (git mid-commit too) and the
daemon started again on the same root. What was acknowledged must be there.

    .venv/bin/python bench/crash.py [--rounds 20] [--seconds 2.5] [--root DIR]

Writers, each on its own connection: two memory_write (new notes), one
memory_update (a note of its own, rewritten), one memory_remember (turns of a
session per round), one memory_add (`I live in <city>`: the rules chain location
facts, each replacing the last). After each restart it checks every acknowledgement
so far: each note and turn readable with the content acknowledged (an update cut off
mid-call may have landed: its content counts too), no content stored twice, every
`replaces` answered by the old fact's `replaced_by`, at most one current location
fact, no temp file left, and git committing again (no stale lock). Prints the counts.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from memoryd_client import Client, DaemonUnavailable, RpcFailure

CONFIG = "git:\n  enabled: true\n  commit_interval: 1s\n"
WORDS = ("harbour lantern violin orchard glacier compass thunder pepper saddle tunnel "
         "meadow kettle falcon ribbon quarry lagoon pylon walnut cobalt beacon marble "
         "canyon thistle anchor velvet prairie cedar monsoon ledger granite").split()
CITIES = ["Paris", "Berlin", "Lisbon", "Oslo", "Kyoto", "Lima", "Quito", "Accra", "Perth",
          "Tunis", "Hanoi", "Dakar", "Riga", "Sofia", "Bern", "Doha"]


@dataclass
class Acks:
    lock: threading.Lock = field(default_factory=threading.Lock)
    notes: dict[str, str] = field(default_factory=dict)  # id -> content acknowledged
    in_flight: dict[str, str] = field(default_factory=dict)  # id -> update not answered
    turns: dict[str, str] = field(default_factory=dict)
    facts: set[str] = field(default_factory=set)
    calls: Counter[str] = field(default_factory=Counter)
    fresh: set[str] = field(default_factory=set)  # acknowledged since the last check


def start(root: Path) -> subprocess.Popen[bytes]:
    with open(root.parent / "crash.log", "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memoryd", "serve", "--root", str(root), "--log-level",
             "warning", "--log-format", "json"], stdout=log, stderr=log,
            start_new_session=True)  # its group: git's children die with it
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            with Client(root / "memory.sock", retries=0, timeout=5) as c:
                if c.call("health")["status"] == "ok":
                    return proc
        except (DaemonUnavailable, OSError, RpcFailure):
            pass
        time.sleep(0.05)
    raise SystemExit("the daemon did not start")


def writers(sock: Path, acks: Acks, round_no: int, stop: threading.Event
            ) -> list[threading.Thread]:
    def loop(kind: str, n: int) -> None:
        i = 0
        try:
            with Client(sock, timeout=30, retries=0) as c:
                own: str | None = None
                while not stop.is_set():
                    i += 1
                    tag = f"r{round_no}{kind}{n}i{i}"
                    if kind == "write":
                        content = f"crash probe note {tag} zq{tag}q"
                        m = c.call("memory_write", {"content": content})
                        with acks.lock:
                            acks.notes[m["id"]] = content
                            acks.fresh.add(m["id"])
                    elif kind == "update":
                        if own is None:
                            content = f"crash probe updated note {tag}"
                            own = c.call("memory_write", {"content": content})["id"]
                            with acks.lock:
                                acks.notes[own] = content
                                acks.fresh.add(own)
                            continue
                        content = f"crash probe updated note {tag} (rewritten)"
                        with acks.lock:
                            acks.in_flight[own] = content
                        c.call("memory_update", {"id": own, "content": content})
                        with acks.lock:
                            acks.notes[own] = content
                            acks.in_flight.pop(own, None)
                            acks.fresh.add(own)
                    elif kind == "remember":
                        words = random.sample(WORDS, 6)
                        content = (f"My {words[0]} and the {words[1]} met a {words[2]} near "
                                   f"the {words[3]}, then {words[4]} {words[5]} ({tag})")
                        r = c.call("memory_remember", {"session": f"crash-{round_no}",
                                                       "role": "user", "content": content})
                        if r["stored"]:
                            with acks.lock:
                                acks.turns[r["id"]] = content
                                acks.fresh.add(r["id"])
                    else:
                        city = random.choice(CITIES)
                        r = c.call("memory_add", {"text": f"I live in {city} now ({tag})"})
                        with acks.lock:
                            acks.facts.update(f["id"] for f in r["facts"]
                                              if f["event"] in ("ADD", "UPDATE"))
                    acks.calls[kind] += 1
        except (OSError, DaemonUnavailable, RpcFailure):
            pass  # killed mid-call: that call was never acknowledged

    kinds = [("write", 0), ("write", 1), ("update", 0), ("remember", 0), ("add", 0)]
    threads = [threading.Thread(target=loop, args=k, daemon=True) for k in kinds]
    for t in threads:
        t.start()
    return threads


def check(sock: Path, root: Path, acks: Acks, whole: bool) -> dict[str, int]:
    """The acknowledgements since the last check (`whole`: all of them) against what
    the restarted daemon serves, and the invariants over everything it holds."""
    found = Counter[str]()
    written = {**acks.notes, **acks.turns}
    ids = sorted(written if whole else acks.fresh & written.keys())
    acks.fresh.clear()
    found["checked"] = len(ids)
    with Client(sock, timeout=120) as c:
        for memory_id in ids:
            content = written[memory_id]
            try:
                got = c.call("memory_read", {"id": memory_id})["content"]
            except RpcFailure:
                found["lost"] += 1
                continue
            if got != content and got != acks.in_flight.get(memory_id):
                found["changed"] += 1
        contents: Counter[str] = Counter()
        current_locations = 0
        replacing: list[tuple[str, str]] = []  # (current fact, the one it replaces)
        after = ""
        while True:  # export pages by id: stable while the daemon writes meanwhile
            page = c.call("memory_export", {"after": after, "limit": 500})
            for line in page["lines"]:
                m = json.loads(line)
                if m.get("trashed") or m.get("superseded_at") or m.get("compressed"):
                    continue
                contents[m["content"]] += 1
                if m["kind"] == "fact" and m["content"].startswith("The user lives in"):
                    current_locations += 1
                replacing += [(m["id"], old) for old in m.get("replaces") or []]
            if page["next"] is None:
                break
            after = page["next"]
        twice = {text: n for text, n in contents.items() if n > 1}
        found["duplicated"] = sum(n - 1 for n in twice.values())
        for text, n in list(twice.items())[:3]:
            print(f"  stored {n} times: {text[:100]!r}", flush=True)
        found["current_locations_over_one"] = max(0, current_locations - 1)
        for fact in sorted(acks.facts):  # current, or superseded into trash/ (history)
            try:  # by id: a current fact's file is named by its title, not its id
                c.call("memory_read", {"id": fact})
            except RpcFailure:
                found["lost"] += 1
        found["facts_replacing"] = len(replacing)
        for new, old in replacing:  # the fact replaced (history, still readable)
            try:
                replaced_by = c.call("memory_read", {"id": old}).get("replaced_by")
            except RpcFailure:
                replaced_by = None
            if replaced_by != new:
                found["broken_replaces"] += 1
    return dict(found)


def stale_temps(root: Path, since: float) -> int:
    """Temp files older than this daemon's start still there a round later (start-up
    and the sweep after it remove a killed daemon's; the running one's are newer)."""
    stale = 0
    for folder, dirs, names in os.walk(root):  # errors (a folder gone) are skipped
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            if name.startswith(".tmp-"):
                with contextlib.suppress(FileNotFoundError):  # renamed into place
                    stale += os.stat(os.path.join(folder, name)).st_mtime < since
    return stale


def git_state(sock: Path) -> dict[str, int]:
    """Commits and failures of this daemon's life so far (before it is killed)."""
    with Client(sock, timeout=30) as c:
        git = c.call("stats")["git"]
    return {"git_commits": git.get("commits", 0), "git_failures": git.get("failures", 0)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=2.5, help="mean writing time")
    parser.add_argument("--root")
    args = parser.parse_args()
    base = Path(args.root or tempfile.mkdtemp(prefix="memoryd-crash-"))
    root = base / "root"
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.yaml").write_text(CONFIG)
    acks = Acks()
    rng = random.Random(7)
    totals: Counter[str] = Counter()
    started = time.monotonic()
    for round_no in range(args.rounds + 1):
        since = time.time()
        proc = start(root)
        threads: list[threading.Thread] = []
        stop = threading.Event()
        try:
            if round_no:
                t0 = time.monotonic()
                found = check(root / "memory.sock", root, acks, whole=round_no == args.rounds)
                totals.update(found)
                bad = {k: v for k, v in found.items()
                       if v and k not in ("facts_replacing", "checked")}
                print(f"round {round_no}: after kill -9, {sum(acks.calls.values())} calls "
                      f"acknowledged so far, checked in {time.monotonic() - t0:.1f} s: "
                      f"{bad or 'all there'}", flush=True)
            if round_no == args.rounds:
                break
            threads = writers(root / "memory.sock", acks, round_no, stop)
            time.sleep(rng.uniform(0.4, 1.6) * args.seconds)
            totals.update(git_state(root / "memory.sock"))
            totals["temp_files"] += stale_temps(root, since)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            stop.set()
            for t in threads:
                t.join(30)
    print(f"\n{args.rounds} kill -9 rounds in {time.monotonic() - started:.0f} s; "
          f"acknowledged: {dict(acks.calls)} ({len(acks.notes)} notes, {len(acks.turns)} "
          f"turns, {len(acks.facts)} facts)")
    print(f"  checked after the last round: all {len(acks.notes) + len(acks.turns)} notes "
          f"and turns, {len(acks.facts)} facts")
    for key in ("lost", "changed", "duplicated", "facts_replacing", "broken_replaces",
                "current_locations_over_one", "temp_files", "git_commits", "git_failures"):
        print(f"  {key}: {totals.get(key, 0)}")


if __name__ == "__main__":
    main()
