"""Two runs, one answer: compare the per-question rankings of two benchmark runs.

    .venv/bin/python bench/same_rankings.py a.json b.json [--k 10]

Takes the `--out` files of `bench/locomo.py` or `bench/notes.py` (each has
`per_question`: a question and what it `retrieved`, in order). Prints how many
questions got a different top 1, 5 and k, and the first few that differ; exits 1 when
any top k differs, 0 when every ranking is the same.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def rankings(path: Path) -> list[tuple[str, list[str]]]:
    data: dict[str, Any] = json.loads(path.read_text())
    return [(f"{q.get('conv_id', '')} {q['question']}".strip(), list(q["retrieved"]))
            for q in data["per_question"]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("first", type=Path)
    ap.add_argument("second", type=Path)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--show", type=int, default=5, help="differing questions to print")
    args = ap.parse_args()
    a, b = rankings(args.first), rankings(args.second)
    if [q for q, _ in a] != [q for q, _ in b]:
        print("the two runs asked different questions (or in another order)", file=sys.stderr)
        return 2
    cuts = sorted({1, 5, args.k})
    differ = {k: [q for (q, x), (_, y) in zip(a, b, strict=True) if x[:k] != y[:k]]
              for k in cuts}
    print(f"{len(a)} questions; " + ", ".join(
        f"a different top {k}: {len(differ[k])}" for k in cuts))
    for (question, x), (_, y) in zip(a, b, strict=True):
        if question in differ[args.k][:args.show]:
            print(f"  {question}\n    {x[:args.k]}\n    {y[:args.k]}")
    return 1 if differ[args.k] else 0


if __name__ == "__main__":
    sys.exit(main())
