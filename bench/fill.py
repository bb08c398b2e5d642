"""Fill a root fast for scale runs: N generated notes written as Markdown files, then
`memoryd reindex` builds every index from them (the first start of a big vault).

    .venv/bin/python bench/fill.py --root ~/r1m --memories 1000000

The notes are bench/search.py's (same generator, same seed per size), with the front
matter memoryd itself writes. It prints how long writing the files took, then the
reindex (its progress goes to the log at each 5%), the root's size on disk and the
daemon-free RSS peak of the reindex. Then measure with `bench/search.py --root`.
"""

from __future__ import annotations

import argparse
import random
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.search import note  # noqa: E402
from memoryd.schema import Memory, content_hash, new_id  # noqa: E402
from memoryd.store import frontmatter  # noqa: E402
from memoryd.store.files import MarkdownStore  # noqa: E402

START = datetime(2024, 1, 1, tzinfo=UTC)


def generated(rng: random.Random, i: int) -> Memory:
    """The i-th generated note, as memoryd writes a note (bench/search.py's text)."""
    fields = note(rng, i)
    at = START + timedelta(seconds=30 * i)
    return Memory(id=new_id(), content=fields["content"],
                  content_hash=content_hash(fields["content"]), kind="note",
                  phase="organized", category=fields["category"], type="semantic",
                  scope="global", tags=fields["tags"], source="bench",
                  importance=fields["importance"], created_at=at, updated_at=at)


def write_files(root: Path, n: int) -> float:
    store = MarkdownStore(root)
    rng = random.Random(n)
    t0 = last = time.perf_counter()
    for i in range(n):
        memory = generated(rng, i)
        path = root / store.relpath_for(memory)
        path.write_bytes(frontmatter.render(memory))
        if time.perf_counter() - last > 30:
            print(f"  ... {i + 1}/{n} files", flush=True)
            last = time.perf_counter()
    return time.perf_counter() - t0


def du(root: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in ("categories", "index"):
        got = subprocess.run(["du", "-sb", str(root / part)], capture_output=True, text=True)
        out[part] = int(got.stdout.split()[0]) if got.returncode == 0 else 0
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--memories", type=int, default=1_000_000)
    args = parser.parse_args()
    root = args.root.expanduser()
    if (root / "categories").exists():
        raise SystemExit(f"{root} already holds memories: give a new root")
    root.mkdir(mode=0o700, parents=True)
    files = write_files(root, args.memories)
    print(f"{args.memories} files written in {files:.0f} s", flush=True)
    t0 = time.perf_counter()
    with open(root.parent / f"{root.name}.reindex.log", "wb") as log:
        done = subprocess.run([sys.executable, "-m", "memoryd", "reindex", "--root", str(root)],
                              stdout=subprocess.PIPE, stderr=log)
    took = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(done.stdout.decode().strip(), flush=True)
    if done.returncode:
        raise SystemExit(f"reindex failed ({done.returncode}): see {log.name}")
    sizes = du(root)
    print(f"reindex {took:.0f} s ({args.memories / took:.0f} memories/s), peak RSS "
          f"{peak:.0f} MB; on disk: files {sizes['categories'] / 1e9:.2f} GB, indexes "
          f"{sizes['index'] / 1e9:.2f} GB", flush=True)


if __name__ == "__main__":
    main()
