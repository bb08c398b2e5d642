"""Data in and out through a real daemon: ingest notes/s (Logseq's documentation graph
and N generated notes), then export and import of M memories: time and peak RSS of
the daemon and of memoryctl.

    .venv/bin/python -m bench.ingest [--notes 10000] [--memories 100000]

Git history is off here (it is measured on its own: a background commit per interval).
The M memories are made by importing generated JSONL (the bulk path), so the import
figure is also how fast a root fills.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench.protocol import start_daemon
from memoryd_client import Client

LOGSEQ = (Path(__file__).resolve().parents[1].parent / "shared" / "bench" / "ingest"
          / "logseq-docs")
WORDS = ("garden tomato meeting budget python recipe travel bicycle river museum piano "
         "deadline invoice holiday sourdough compiler lighthouse marathon violin").split()


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def memoryctl(root: Path, *args: str) -> tuple[float, float, str]:
    """(seconds, peak RSS MB, stdout) of one memoryctl run (its own rusage)."""
    env = dict(os.environ, MEMORY_HOME=str(root))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "memoryctl", *args], env=env,
                                stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"memoryctl {' '.join(args)} failed: {err.read().decode()[-500:]}")
        return seconds, usage.ru_maxrss / 1024, out.read().decode()


def vault(folder: Path, n: int) -> None:
    for i in range(n):
        sub = folder / f"area-{i % 20}"
        sub.mkdir(parents=True, exist_ok=True)
        words = " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(40))
        (sub / f"Note {i}.md").write_text(
            f"---\ntags: [t{i % 50}]\n---\nNote {i} about {words}.\n\nSee [[Note {(i + 1) % n}]]"
            f" and #topic{i % 30}.\n")


def jsonl(path: Path, n: int) -> None:
    with path.open("w") as f:
        for i in range(n):
            words = " ".join(WORDS[(i * 13 + k) % len(WORDS)] for k in range(12))
            f.write(json.dumps({"id": str(uuid.UUID(int=i + 1)), "kind": "note",
                                "phase": "organized", "category": "knowledge",
                                "content": f"Memory {i}: {words}.",
                                "created_at": "2026-01-01T00:00:00Z",
                                "updated_at": "2026-01-01T00:00:00Z"}) + "\n")


def ingest(root: Path, source: str, path: Path) -> tuple[float, dict]:
    with Client(root / "memory.sock", timeout=3600) as client:
        started = time.perf_counter()
        result = client.call("memory_ingest", {"source": source, "path": str(path)})
        return time.perf_counter() - started, result


def notes_bench(root: Path, tmp_path: Path, count: int, pid: int) -> None:
    if LOGSEQ.is_dir():
        seconds, result = ingest(root, "logseq", LOGSEQ)
        print(f"logseq docs graph: {result['added']} notes in {seconds:.1f} s "
              f"({result['added'] / seconds:.0f} notes/s), "
              f"{result['reports'][0]['links']} links", flush=True)
        seconds, result = ingest(root, "logseq", LOGSEQ)
        print(f"  re-run: {result['unchanged']} unchanged in {seconds:.1f} s", flush=True)
    notes = tmp_path / "vault"
    vault(notes, count)
    seconds, result = ingest(root, "obsidian", notes)
    print(f"{count} generated notes: {result['added']} added in {seconds:.1f} s "
          f"({result['added'] / seconds:.0f} notes/s), {result['reports'][0]['links']} links; "
          f"daemon peak RSS {peak_rss_mb(pid):.0f} MB", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--memories", type=int, default=100_000)
    ap.add_argument("--no-notes", action="store_true", help="only export and import")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ingest-bench-") as tmp:
        tmp_path = Path(tmp)
        root = tmp_path / "root"
        root.mkdir(mode=0o700)
        (root / "config.yaml").write_text("git:\n  enabled: false\njobs:\n  enabled: false\n")
        proc = start_daemon(root)
        try:
            if not args.no_notes:
                notes_bench(root, tmp_path, args.notes, proc.pid)
        finally:
            proc.terminate()
            proc.wait(60)

        root = tmp_path / "big"
        root.mkdir(mode=0o700)
        (root / "config.yaml").write_text("git:\n  enabled: false\njobs:\n  enabled: false\n")
        source = tmp_path / "in.jsonl"
        jsonl(source, args.memories)
        proc = start_daemon(root)
        try:
            seconds, rss, out = memoryctl(root, "import", "--input", str(source))
            print(f"import {args.memories}: {seconds:.0f} s ({args.memories / seconds:.0f}/s); "
                  f"memoryctl peak RSS {rss:.0f} MB, daemon peak RSS "
                  f"{peak_rss_mb(proc.pid):.0f} MB; {out.splitlines()[0]}", flush=True)
            out_path = tmp_path / "out.jsonl"
            seconds, rss, out = memoryctl(root, "export", "--output", str(out_path))
            print(f"export {args.memories}: {seconds:.1f} s ({args.memories / seconds:.0f}/s); "
                  f"memoryctl peak RSS {rss:.0f} MB, daemon peak RSS "
                  f"{peak_rss_mb(proc.pid):.0f} MB; {out_path.stat().st_size / 1e6:.0f} MB "
                  "of JSONL", flush=True)
        finally:
            proc.terminate()
            proc.wait(120)


if __name__ == "__main__":
    main()
