"""Heuristic reconciliation (no model) on pairs written before its rules
(`bench/data/reconcile-pairs.json`): each is a fact known, then what the user said, and
the right decision.

    .venv/bin/python bench/reconcile.py

Printed: how many of the `updates` pairs (a change of one frame, or one more item of a
kind, said as people say it) and of the `kept` pairs (a frame's words used for something
else: both facts stay) get the right decision, each pair the rules miss with the
decision they made, and whether every miss still kept both facts (nothing is lost).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from memoryd.conversation import reconcile  # noqa: E402
from memoryd.conversation.reconcile import Known  # noqa: E402
from memoryd.lang import facts  # noqa: E402
from memoryd.models.embedder import OnnxEmbedder  # noqa: E402

PAIRS = REPO / "bench" / "data" / "reconcile-pairs.json"


def decide(known: str, said: str, alike: reconcile.Alike) -> str:
    """The heuristic's decision on what was `said` against the one fact `known`."""
    (fact,) = facts.extract(known)
    new = facts.extract(said)
    if not new:
        return "no fact"
    return reconcile.heuristic(new, [None] * len(new), [Known("k0", fact)], 0.92,
                               alike)[0].event


def main() -> None:
    data = json.loads(PAIRS.read_text())
    alike = reconcile.alike_by(OnnxEmbedder().embed)  # the shipped model, as the engine
    lost = 0
    for group in ("updates", "kept"):
        pairs = data[group]
        right = 0
        for pair in pairs:
            got = decide(pair["known"], pair["said"], alike)
            right += got == pair["expected"]
            if got != pair["expected"]:
                lost += got not in ("ADD",)
                print(f"  miss ({group}): {pair['known']!r} then {pair['said']!r}: "
                      f"{got}, not {pair['expected']}")
        print(f"{group:8} {right}/{len(pairs)} right")
    print(f"misses that lost a fact or kept none: {lost}")


if __name__ == "__main__":
    main()
