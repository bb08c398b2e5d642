"""What dream proposes, on notes and on a conversation: a real daemon (real model, no
LLM), `dream` at level 3 as a dry run.

    .venv/bin/python bench/dream.py [--conv 0] [--turns 400]

1. The Logseq documentation graph (`../shared/bench/ingest/logseq-docs`), ingested.
2. A LoCoMo conversation's first `--turns` turns through `memory_remember` (the first
   speaker as the user; facts learned without an LLM), dated as the conversation is,
   and the background backlog drained.
Then one `jobs/run dream --level 3 --dry-run` over both, and what it would do: the
reminders it would make (each with the sentence and the time it read), and the
categories it would file the inbox's notes under (with how many it calls `people`).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.protocol import start_daemon
from bench.remember import LOCOMO, params, turns_of
from memoryd_client import Client

LOGSEQ = Path(__file__).resolve().parents[2] / "shared" / "bench" / "ingest" / "logseq-docs"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conv", type=int, default=0)
    ap.add_argument("--turns", type=int, default=400)
    args = ap.parse_args()
    conv = json.loads(LOCOMO.read_text())[args.conv]
    with tempfile.TemporaryDirectory(prefix="dream-") as tmp:
        root = Path(tmp) / "root"
        proc = start_daemon(root)
        try:
            with Client(root / "memory.sock", timeout=600) as c:
                ingested = c.call("memory_ingest", {"source": "logseq", "path": str(LOGSEQ)})
                for turn in turns_of(conv)[:args.turns]:
                    c.call("memory_remember", params(turn))
                while c.call("stats")["backlog"]:
                    time.sleep(0.5)
                report = c.call("jobs/run", {"job": "dream", "level": 3, "dry_run": True})
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
    changes = report["changes"]
    reminders = [ch for ch in changes if ch["action"] == "remind"]
    filed = Counter(ch["after"]["category"] for ch in changes if ch["action"] == "classify")
    print(f"ingested {ingested['added']} Logseq notes; {args.turns} turns of LoCoMo "
          f"conversation {args.conv} remembered")
    print(f"dream level 3 would make {len(reminders)} reminders:")
    for ch in reminders:
        print(f"  due {ch['after']['due_at'][:16]} from {ch['after']['said']!r} ({ch['id'][:8]})")
    print(f"would file {sum(filed.values())} inbox notes: "
          + ", ".join(f"{k} {v}" for k, v in filed.most_common()))


if __name__ == "__main__":
    main()
