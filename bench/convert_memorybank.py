"""MemoryBank's evaluation set as a LoCoMo-format file, with our evidence.

    .venv/bin/python bench/convert_memorybank.py SOURCE_DIR [--lang en|cn] [--out FILE]

SOURCE_DIR holds `memory_bank_en.json` and `probing_questions_en.jsonl`, and for
`--lang cn` also `memory_bank_cn.json` and `probing_questions_cn.jsonl` (the folders
`eval_data/en` and `eval_data/cn` of github.com/zhongwanjun/MemoryBank-SiliconFriend).
The questions come with no answers and no evidence; `bench/data/memorybank/evidence.tsv`
gives the turns that answer each English one, written by hand before any retriever ran
on the set (its README says how). Each user becomes one conversation, each day one
session, each exchange two turns (the user's, then the companion's), so
`bench/locomo.py --data` and the shared evaluator read it as they read LoCoMo.

The Chinese set is the English one's translation, user for user and question for
question: a user whose days hold as many exchanges as in English keeps the English
evidence turn for turn (and each question its English category); the others are left
out, and listed.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent / "data" / "memorybank"
COMPANION = {"en": "AI companion", "cn": "AI伴侣"}
MULTI_HOP, TEMPORAL, SINGLE_HOP = 1, 2, 4  # LoCoMo's category numbers
# The question names or asks for a day: the category the evidence rules give it.
TIME_WORDS = re.compile(
    r"\b(?:january|february|march|april|may \d|june|july|august|september|october|"
    r"november|december|\d+(?:st|nd|rd|th)\b|days? ago|first conversation|"
    r"specific date|yesterday|last week)", re.I)


def sessions_of(history: dict[str, list[dict[str, str]]], name: str, companion: str
                ) -> dict[str, object]:
    out: dict[str, object] = {"speaker_a": name, "speaker_b": companion}
    for number, (day, exchanges) in enumerate(history.items(), 1):
        when = date.fromisoformat(day)
        out[f"session_{number}_date_time"] = f"9:00 pm on {when.day} {when:%B}, {when.year}"
        turns = []
        for exchange in exchanges:
            for speaker, text in ((name, exchange["query"]), (companion, exchange["response"])):
                turns.append({"speaker": speaker, "dia_id": f"D{number}:{len(turns) + 1}",
                              "text": " ".join(text.split())})
        out[f"session_{number}"] = turns
    return out


def category(question: str, evidence: list[str]) -> int:
    if len({e.split(":")[0] for e in evidence}) > 1:
        return MULTI_HOP
    return TEMPORAL if TIME_WORDS.search(question) else SINGLE_HOP


def _questions(path: Path) -> list[tuple[str, list[str]]]:
    out = []
    for line in path.read_text().splitlines():
        if line.strip():
            ((name, asked),) = json.loads(line).items()
            out.append((name.strip(), asked))
    return out


def _shape(user: dict) -> list[tuple[str, int]]:
    return [(day, len(exchanges)) for day, exchanges in user["history"].items()]


def convert(source: Path, evidence_file: Path, lang: str = "en"
            ) -> tuple[list[dict], list[str]]:
    users = json.loads((source / "memory_bank_en.json").read_text())
    questions = dict(_questions(source / "probing_questions_en.jsonl"))
    with evidence_file.open(newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    samples, dropped = [], []
    translated = (json.loads((source / "memory_bank_cn.json").read_text()).values()
                  if lang == "cn" else [None] * len(users))
    asked_cn = (_questions(source / "probing_questions_cn.jsonl") if lang == "cn"
                else [("", [])] * len(users))
    for (raw_name, user), other, (name_cn, cn_questions) in zip(
            users.items(), translated, asked_cn, strict=True):
        name = raw_name.strip()
        speaker = name
        if other is not None:
            if _shape(other) != _shape(user) or len(cn_questions) != len(questions[name]):
                dropped.append(f"{name} ({name_cn}): its days differ from the English")
                continue
            speaker = name_cn
        conversation = sessions_of((other or user)["history"], speaker, COMPANION[lang])
        known = {t["dia_id"] for k, v in conversation.items() if k.startswith("session_")
                 and isinstance(v, list) for t in v}
        qa = []
        for row in (r for r in rows if r["user"] == name):
            number = int(row["question"])
            asked = questions[name][number].strip().strip('"')
            shown = cn_questions[number].strip().strip('"') if other is not None else asked
            if row["dropped because"]:
                dropped.append(f"{name} #{row['question']} ({asked!r}): {row['dropped because']}")
                continue
            evidence = row["evidence"].split(",")
            if unknown := [e for e in evidence if e not in known]:
                raise SystemExit(f"{name} #{row['question']}: no turn {unknown}")
            qa.append({"question": shown, "answer": "", "evidence": evidence,
                       "category": category(asked, evidence)})
        if len(qa) + sum(d.startswith(f"{name} #") for d in dropped) != len(questions[name]):
            raise SystemExit(f"{name}: evidence.tsv does not cover every question")
        prefix = "mb-" if lang == "en" else "mb-cn-"
        samples.append({"sample_id": prefix + name.lower().replace(" ", "-"),
                        "conversation": conversation, "qa": qa})
    return samples, dropped


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("source", type=Path)
    ap.add_argument("--lang", choices=["en", "cn"], default="en")
    ap.add_argument("--evidence", type=Path, default=HERE / "evidence.tsv")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    args.out = args.out or HERE / f"memorybank-{args.lang}.json"
    samples, dropped = convert(args.source, args.evidence, args.lang)
    args.out.write_text(json.dumps(samples, ensure_ascii=False, indent=1) + "\n")
    counts: dict[int, int] = {}
    for sample in samples:
        for qa in sample["qa"]:
            counts[qa["category"]] = counts.get(qa["category"], 0) + 1
    turns = sum(len(v) for s in samples for k, v in s["conversation"].items()
                if k.startswith("session_") and isinstance(v, list))
    print(f"{len(samples)} conversations, {turns} turns, "
          f"{sum(counts.values())} questions by category {dict(sorted(counts.items()))}; "
          f"{len(dropped)} dropped:")
    for line in dropped:
        print("  " + line)


if __name__ == "__main__":
    main()
