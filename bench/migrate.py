"""`memoryd migrate --layout readable` at scale: a root of N notes as an older memoryd
left it (categories/<category>/<id>.md, indexed, under git), migrated cleanly and, on a
copy, through rounds of kill -9 at random moments; then every file's bytes compared by
id with the root before (a rename changes no byte), the names of both runs compared,
git's record of the renames counted, and a daemon's start timed before and after.

    .venv/bin/python bench/migrate.py --memories 100000 --rounds 10
"""

from __future__ import annotations

import argparse
import hashlib
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.fill import generated  # noqa: E402
from bench.protocol import start_daemon  # noqa: E402
from memoryd.store import frontmatter  # noqa: E402
from memoryd.store.files import MarkdownStore  # noqa: E402

MIGRATE = [sys.executable, "-m", "memoryd", "migrate", "--layout", "readable", "--root"]


def old_root(root: Path, n: int) -> None:
    """N notes named <id>.md, as memoryd wrote them before readable names."""
    MarkdownStore(root)
    rng = random.Random(n)
    for i in range(n):
        memory = generated(rng, i)
        (root / f"categories/{memory.category}/{memory.id}.md").write_bytes(
            frontmatter.render(memory))


def by_id(root: Path) -> dict[str, tuple[str, str]]:
    """id -> (sha256 of the file's bytes, its name), for every note."""
    out = {}
    for path in (root / "categories").rglob("*.md"):
        data = path.read_bytes()
        memory_id = frontmatter.parse(data.decode(), path.stem).memory.id
        out[memory_id] = (hashlib.sha256(data).hexdigest(), path.name)
    return out


def timed_start(root: Path) -> float:
    started = time.perf_counter()
    proc = start_daemon(root)
    took = time.perf_counter() - started
    proc.send_signal(signal.SIGTERM)
    proc.wait(120)
    return took


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          check=True).stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="migrate-") as tmp:
        clean, killed = Path(tmp) / "clean", Path(tmp) / "killed"
        t0 = time.perf_counter()
        old_root(clean, args.memories)
        print(f"{args.memories} files named by id written in {time.perf_counter() - t0:.0f} s",
              flush=True)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "memoryd", "reindex", "--root", str(clean)],
                       check=True, capture_output=True)
        print(f"indexed in {time.perf_counter() - t0:.0f} s", flush=True)
        git(clean, "init", "-q")
        git(clean, "add", "-A", "categories")
        git(clean, "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "old")
        before = by_id(clean)
        start_old = timed_start(clean)
        shutil.copytree(clean, killed, symlinks=True)

        t0 = time.perf_counter()
        done = subprocess.run([*MIGRATE, str(clean)], capture_output=True, text=True,
                              check=True)
        took = time.perf_counter() - t0
        print(f"clean run: {took:.1f} s ({args.memories / took:.0f} files/s): "
              f"{done.stdout.strip()}", flush=True)
        renames = git(clean, "show", "--name-status", "--format=", "HEAD").splitlines()
        print(f"git: {sum(r.startswith('R100') for r in renames)} of {len(renames)} changes "
              "in the commit are renames (R100)", flush=True)

        rng = random.Random(7)
        for n in range(1, args.rounds + 1):
            proc = subprocess.Popen([*MIGRATE, str(killed)], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0.2, took * 0.9))
            proc.kill()
            proc.wait()
            left = sum(1 for p in (killed / "categories").rglob("*.md")
                       if len(p.stem) == 36 and p.stem.count("-") == 4)
            print(f"round {n}: killed, {left} files still named by id", flush=True)
        subprocess.run([*MIGRATE, str(killed)], capture_output=True, check=True)
        after_clean, after_killed = by_id(clean), by_id(killed)
        same_bytes = all(after_clean[i][0] == before[i][0] == after_killed[i][0]
                         for i in before)
        print(f"ids before/after: {len(before)}/{len(after_clean)}/{len(after_killed)}; "
              f"every file's bytes unchanged: {same_bytes}; names of the clean and the "
              f"killed runs equal: "
              f"{all(after_clean[i][1] == after_killed[i][1] for i in before)}", flush=True)
        start_new = timed_start(clean)
        print(f"daemon start before {start_old:.1f} s, after {start_new:.1f} s", flush=True)


if __name__ == "__main__":
    main()
