"""LongMemEval_S's development split as a LoCoMo-format file, so `bench/locomo.py
--data` and the shared evaluator read it as they read LoCoMo and MemoryBank.

    .venv/bin/python bench/convert_longmemeval.py --out /tmp/lme-dev60.json
    .venv/bin/python bench/locomo.py --data /tmp/lme-dev60.json --include-adversarial

The source (`shared/bench/longmemeval/longmemeval_s_dev60.json.gz`, 60 instances) keeps
each instance as one conversation of a user and an assistant, its turns with their
session and time, and its one question with the turns and sessions that hold the
evidence. Each instance becomes one LoCoMo sample: its sessions `session_<n>` (the
time of a session is its first turn's), its question in `qa` with LongMemEval's type
as the category (1 single-session-user, 2 single-session-assistant, 3
single-session-preference, 4 multi-session, 5 knowledge-update, 6 temporal-reasoning;
the evaluator names 1-5 by LoCoMo's categories and leaves 5 out unless
`--include-adversarial`). The evaluator's session-level hit@5 is LongMemEval's
recall_any@5 over the first 20 turns ranked. Each question keeps its own date
(`question_date`, which the evaluator passes over): `bench/locomo.py --reference-time`
asks it then, as LongMemEval's protocol does ("a week ago" is a week before it).

The other 440 instances are held back for evaluation: nothing here reads them.
"""

from __future__ import annotations

import argparse
import gzip
import json
from datetime import datetime
from pathlib import Path

SOURCE = (Path(__file__).resolve().parents[2] / "shared" / "bench" / "longmemeval"
          / "longmemeval_s_dev60.json.gz")


def session_time(stamp: str) -> str:
    """LoCoMo's way of writing a session's time ("1:56 pm on 8 May, 2023")."""
    at = datetime.fromisoformat(stamp)
    return f"{at:%I:%M %p} on {at.day} {at:%B}, {at.year}"


def sample(conv: dict) -> dict:
    sessions: dict[int, list[dict]] = {}
    times: dict[int, str] = {}
    for turn in conv["turns"]:
        n = int(turn["session"])
        sessions.setdefault(n, []).append(
            {"speaker": turn["speaker"], "dia_id": turn["id"], "text": turn["text"]})
        times.setdefault(n, session_time(turn["timestamp"]))
    conversation: dict[str, object] = {"speaker_a": conv["speakers"][0],
                                       "speaker_b": conv["speakers"][1]}
    for n in sorted(sessions):
        conversation[f"session_{n}"] = sessions[n]
        conversation[f"session_{n}_date_time"] = times[n]
    return {"sample_id": conv["conv_id"], "conversation": conversation,
            "qa": [{"question": q["question"], "answer": q["answer"],
                    "category": q["category"], "evidence": q["evidence"],
                    "question_date": conv["question_date"]}
                   for q in conv["qa"]]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", type=Path, default=SOURCE)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    with gzip.open(args.source, "rt") as f:
        data = json.load(f)
    samples = [sample(c) for c in data["conversations"]]
    args.out.write_text(json.dumps(samples))
    print(f"{len(samples)} instances, {sum(len(c['turns']) for c in data['conversations'])} "
          f"turns, {sum(len(c['qa']) for c in data['conversations'])} questions -> {args.out}")


if __name__ == "__main__":
    main()
