"""Said first, said later: does the current value come first?

    .venv/bin/python bench/changes.py [--half tune|more|held|all] [--misses]

A real daemon (real model, no LLM). For each pair of bench/data/changes.json, in a
scope of its own: the user's first statement through `memory_remember`, then, 30 days
later, the change as people say it; the background work drains; then the pair's
present-tense question as a smart search. Current first: the first result that holds
the later value's word or the earlier's holds the later's. Also: how many pairs
reconciliation itself decided (the earlier fact superseded), which ranking must not
need. The first 30 English and 8 Chinese pairs are the tuning half; the rest are held
out. bench/data/changes-more.json is a second tuning set (`more`), written later in
other forms again.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.protocol import start_daemon
from memoryd_client import Client

DATA = Path(__file__).resolve().parent / "data" / "changes.json"
MORE = DATA.with_name("changes-more.json")
HAN = re.compile(r"[\u4e00-\u9fff]")


def halves(pairs: list[dict]) -> list[str]:
    english = chinese = 0
    out = []
    for pair in pairs:
        if HAN.search(pair["first"]):
            chinese += 1
            out.append("tune" if chinese <= 8 else "held")
        else:
            english += 1
            out.append("tune" if english <= 30 else "held")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--half", choices=("tune", "more", "held", "all"), default="all")
    ap.add_argument("--misses", action="store_true", help="print the tuning sets' misses")
    args = ap.parse_args()
    pairs = json.loads(DATA.read_text())["pairs"]
    which = halves(pairs)
    more = json.loads(MORE.read_text())["pairs"]
    pairs += more
    which += ["more"] * len(more)
    chosen = [(n, p, h) for n, (p, h) in enumerate(zip(pairs, which, strict=True))
              if args.half in ("all", h)]
    first_at = datetime.now(UTC) - timedelta(days=60)
    with tempfile.TemporaryDirectory(prefix="changes-") as tmp:
        root = Path(tmp) / "root"
        proc = start_daemon(root)
        try:
            with Client(root / "memory.sock", timeout=600) as client:
                for n, pair, _ in chosen:
                    for k, (text, at) in enumerate(((pair["first"], first_at),
                                                   (pair["later"], first_at + timedelta(days=30)))):
                        client.call("memory_remember", {
                            "session": f"p{n}-{k}", "role": "user", "content": text,
                            "scope": f"user:p{n}", "timestamp": at.isoformat()})
                while client.call("stats")["backlog"]:
                    time.sleep(0.1)
                score: dict[str, list[int]] = {half: [0, 0, 0]
                                               for half in ("tune", "more", "held")}
                for n, pair, half in chosen:
                    found = client.call("memory_smart_search", {
                        "query": pair["question"], "scope": f"user:p{n}", "top_k": 10})
                    current = None
                    for memory in found["memories"]:
                        text = memory["content"].lower()
                        if pair["new"].lower() in text or pair["old"].lower() in text:
                            current = pair["new"].lower() in text
                            break
                    facts = client.call("memory_list", {"scope": f"user:p{n}", "kind": "fact",
                                                        "replaced": True, "limit": 50})
                    decided = any(m.get("superseded_at") for m in facts["memories"])
                    cell = score[half]
                    cell[0] += bool(current)
                    cell[1] += 1
                    cell[2] += decided
                    if args.misses and half != "held" and not current:
                        print(f"  miss p{n}: {pair['question']!r} -> "
                              f"{[m['content'][:60] for m in found['memories'][:3]]}")
                for half, (right, total, decided) in score.items():
                    if total:
                        print(f"{half}: current first {right}/{total} ({right / total:.0%}); "
                              f"reconciliation superseded the earlier fact in {decided}")
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)


if __name__ == "__main__":
    main()
