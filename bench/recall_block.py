"""What `memory_recall`'s block holds for LoCoMo's questions (or another set's in its
format): how many lines, and how many of them are the question's evidence (precision),
at what recall.

    .venv/bin/python bench/recall_block.py [--convs 0-9] [--via write|remember]
        [--data FILE] [--reference-time]

Each conversation is written as `bench/locomo.py` writes it (through a real daemon),
then each non-adversarial question is one `memory_recall` with default parameters in
the conversation's scope; a fact counts for the turns it was learned from. Printed:
lines a block, evidence precision (the share of the block's memories that are
evidence), evidence recall (the share of the evidence the block holds), and the
question's evidence found at all (any of it), overall and by category.
`--reference-time` gives each recall its conversation's last turn as `reference_time`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.locomo import (  # noqa: E402
    DATA_ENV,
    REFERENCE_ENV,
    VIA_ENV,
    DaemonRetriever,
    data_file,
    load_evaluator,
)

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--convs", default="0-9")
    ap.add_argument("--via", default="write", choices=["write", "remember"])
    ap.add_argument("--data", type=Path)
    ap.add_argument("--reference-time", action="store_true")
    ap.add_argument("--misses", action="store_true",
                    help="print each question whose block lacks some of its evidence")
    args = ap.parse_args()
    os.environ[VIA_ENV] = args.via
    if args.data:
        os.environ[DATA_ENV] = str(args.data.resolve())
    if args.reference_time:
        os.environ[REFERENCE_ENV] = "1"
    first, _, last = args.convs.partition("-")
    data = load_evaluator().load_locomo(data_file())[int(first):int(last or first) + 1]
    daemon = DaemonRetriever()
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0] * 5)  # n, lines, prec, rec, any
    try:
        for conv in data:
            conv_id = conv["conv_id"]
            daemon.ingest(conv_id, conv["turns"])
            for qa in conv["qa"]:
                category = CATEGORIES.get(qa.get("category", 0))
                evidence = set(qa.get("evidence", []))
                if category is None or not evidence:
                    continue
                block = daemon.client.call("memory_recall",
                                           daemon.asking(conv_id, qa["question"]))
                shown: list[str] = []
                for m in block["memories"]:
                    shown += ([daemon.dia_of[m["id"]]] if m["id"] in daemon.dia_of
                              else daemon.derived.get(m["id"], []))
                lines = len(block["memories"])
                hit = evidence & set(shown)
                if args.misses and hit != evidence:
                    print(f"miss {conv_id} {sorted(evidence - hit)} {qa['question']!r} "
                          f"shown {shown}")
                for key in ("overall", category):
                    row = sums[key]
                    row[0] += 1
                    row[1] += lines
                    row[2] += (sum(d in evidence for d in shown) / len(shown)) if shown else 0
                    row[3] += len(hit) / len(evidence)
                    row[4] += bool(hit)
    finally:
        daemon.close()
    print(f"{'':14} {'lines':>6} {'precision':>10} {'recall':>7} {'any':>6} {'n':>6}")
    for key in ("overall", *CATEGORIES.values()):
        n, lines, prec, rec, anyhit = sums[key]
        if n:
            print(f"{key:14} {lines / n:6.2f} {prec / n:10.3f} {rec / n:7.3f} "
                  f"{anyhit / n:6.3f} {int(n):6}")


if __name__ == "__main__":
    main()
