"""What the rules learn from real sentences, by the type a person gave each.

    .venv/bin/python bench/sentence_types.py [--show TYPE] [--errors] [--rules-only]

`bench/data/messages/labelled.jsonl` holds 309 sentences nobody here wrote (users'
turns from LongMemEval, LoCoMo and MemoryBank; the contributing guides of Flask,
Requests and Vue, for the conventions a coding agent is told), each labelled by hand
before any rule was changed for them (bench/data/messages/README.md says how), and
split by a hash of its id into a tuning half and a held-out half.

For each type and half: the kind `lang.kinds.kind_of` reads (accuracy, and whether
it keeps what should be kept: a standing rule, a fact or a preference, and drops a
request, a question, chit-chat or pasted content); how many sentences the fact rules
learn something from (`lang.facts.extract`, as the learning worker calls it; a
project's sentences with `team`), and the type the turn is routed to. `--errors`
prints the tuning half's misreadings only: the held-out half is reported, never shown.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from memoryd.lang import facts, kinds, prototypes, signals
from memoryd.models.embedder import OnnxEmbedder

DATA = Path(__file__).resolve().parent / "data" / "messages" / "labelled.jsonl"
KEEP = ("rule", "fact", "preference")
ORDER = ("rule", "fact", "preference", "request", "question", "chat", "content")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--show", help="print each sentence of this type with what was learned")
    ap.add_argument("--errors", action="store_true",
                    help="print the tuning half's sentences kind_of misreads")
    ap.add_argument("--rules-only", action="store_true",
                    help="structure alone, without the prototypes' reading by meaning")
    args = ap.parse_args()
    # As the learning worker reads a user's turn: the structure rules, then, where
    # they read a statement, the nearest prototypes with the shipped model.
    chat = None if args.rules_only else prototypes.Prototypes(OnnxEmbedder().embed).is_chat
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    learned: dict[tuple[str, str], list[bool]] = defaultdict(list)
    routed: dict[str, Counter[str]] = defaultdict(Counter)
    read: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for row in rows:
        kind = "chat" if chat is not None and chat(row["text"]) else kinds.kind_of(row["text"])
        read[row["type"], row["half"]][kind] += 1
        if args.errors and row["half"] == "tune" and kind != row["type"]:
            print(f"  {row['type']:>10} read as {kind:<10} {row['text'][:110]!r}")
        found = facts.extract(row["text"], facts.MAX_FACTS, team=row["subject"] == "project",
                              chat=chat)
        learned[row["type"], row["half"]].append(bool(found))
        routed[row["type"]][signals.route_type(row["text"], bool(found))] += 1
        if args.show == row["type"]:
            print(f"{'+' if found else '-'} {row['text'][:100]!r} -> {found}")
    print(f"{len(rows)} sentences; kind_of's reading (tuning half | held-out half)")
    for h in ("tune", "held"):
        right = sum(c[t] for (t, hh), c in read.items() if hh == h)
        kept = sum(sum(n for k, n in c.items() if (k in KEEP) == (t in KEEP))
                   for (t, hh), c in read.items() if hh == h)
        total = sum(sum(c.values()) for (t, hh), c in read.items() if hh == h)
        print(f"  {h}: the type right {right}/{total} ({right / total:.1%}); kept or dropped "
              f"right {kept}/{total} ({kept / total:.1%})")
    for t in ORDER:
        cells = [f"{read[t, h][t]}/{sum(read[t, h].values())}" for h in ("tune", "held")]
        print(f"  {t:<11} right {cells[0]:>6} | {cells[1]:>6}   read as "
              f"{dict((read[t, 'tune'] + read[t, 'held']).most_common())}")
    print("what the fact rules learn from them (tuning half | held-out half), and routed as")
    for half_total in ("tune", "held"):
        right = sum(sum(v) if t in KEEP else len(v) - sum(v)
                    for (t, h), v in learned.items() if h == half_total)
        total = sum(len(v) for (t, h), v in learned.items() if h == half_total)
        print(f"  {half_total}: {right}/{total} right ({right / total:.1%}): learned when "
              f"the type should be, not learned when it should not")
    for t in ORDER:
        cells = []
        for h in ("tune", "held"):
            v = learned[t, h]
            cells.append(f"{sum(v)}/{len(v)}" if v else "-")
        want = "learn" if t in KEEP else "skip"
        print(f"  {t:<11} ({want}) learned {cells[0]:>6} | {cells[1]:>6}   routed "
              f"{dict(routed[t].most_common())}")


if __name__ == "__main__":
    main()
