"""Conventions said once: are they shown at the next session's start?

    .venv/bin/python bench/conventions.py [--per-session 10] [--misses]

A real daemon (real model, no LLM). The standing rules and the project's facts of
`bench/data/messages/labelled.jsonl` (sentences of Flask's, Requests' and Vue's
contributing guides, labelled before any rule was tuned on them) are said to a coding
agent through `memory_remember`, as a user says them: `--per-session` of them in a
session of a project of their own, each once, with two ordinary turns of the same half
of the set (a request, a question or chit-chat) between them and an assistant's reply
after every turn. The background work drains; then `memory_context` for the project,
within the token budget a coding agent's `SessionStart` hook gives it, is the block the
next session starts with.

Printed for each half (tune / held): of the rules and of the project's facts said, how
many the block shows (most of the sentence's words on one line: at least 80%), how
many of them word for word (the sentence, its last full stop aside, on one line,
case aside), and how many of the ordinary turns it shows (none should be).
`--misses` prints the tuning half's sentences the block does not show, and the
ordinary turns it shows.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
import tempfile
import time
from collections import defaultdict
from itertools import cycle
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.protocol import start_daemon
from memoryctl.agents import BUDGETS
from memoryd_client import Client

DATA = Path(__file__).resolve().parent / "data" / "messages" / "labelled.jsonl"
WORD = re.compile(r"\w+")
SHOWN = 0.8  # the share of a sentence's words one line of the block must hold
REPLY = "Done: I looked at it and changed what was needed."


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def shown(sentence: str, lines: list[str]) -> tuple[bool, bool]:
    """Whether one line holds most of the sentence's words, and the whole sentence."""
    mine = words(sentence)
    whole = sentence.strip().rstrip(".").lower()
    near = any(sum(w in set(words(line)) for w in mine) >= SHOWN * len(mine)
               for line in lines)
    return near, any(whole in line.lower() for line in lines)


def sessions(rows: list[dict], half: str, per_session: int) -> list[list[dict]]:
    """The half's statements, `per_session` a session, two ordinary turns before each."""
    said = [r for r in rows if r["half"] == half
            and (r["type"] == "rule" or (r["type"] == "fact" and r["subject"] == "project"))]
    ordinary = cycle([r for r in rows if r["half"] == half
                      and r["type"] in ("request", "question", "chat")])
    out = []
    for start in range(0, len(said), per_session):
        turns = []
        for row in said[start:start + per_session]:
            turns += [next(ordinary), next(ordinary), row]
        out.append(turns)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-session", type=int, default=10)
    ap.add_argument("--misses", action="store_true",
                    help="print the tuning half's statements the block leaves out, "
                         "and its ordinary turns the block shows")
    args = ap.parse_args()
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    # per half: [rules said, shown, word for word], the same for facts, and the
    # ordinary turns [said, shown]
    score: dict[str, dict[str, list[int]]] = defaultdict(
        lambda: {"rule": [0, 0, 0], "fact": [0, 0, 0], "ordinary": [0, 0]})
    blocks = []
    with tempfile.TemporaryDirectory(prefix="conventions-") as tmp:
        root = Path(tmp) / "root"
        proc = start_daemon(root)
        try:
            with Client(root / "memory.sock", timeout=600) as client:
                for half in ("tune", "held"):
                    for n, turns in enumerate(sessions(rows, half, args.per_session)):
                        project = f"project:{half}{n}-0a1b2c3d"
                        for turn in turns:
                            for role, text in (("user", turn["text"]), ("assistant", REPLY)):
                                client.call("memory_remember", {
                                    "session": f"{half}{n}", "role": role, "content": text,
                                    "scope": project})
                        blocks.append((half, project, turns))
                while client.call("stats")["backlog"]:
                    time.sleep(0.1)
                for half, project, turns in blocks:
                    text = client.call("memory_context", {
                        "project": project, "token_budget": BUDGETS["start"]})["text"]
                    lines = text.splitlines()
                    for turn in turns:
                        near, whole = shown(turn["text"], lines)
                        if turn["type"] in ("request", "question", "chat"):
                            cell = score[half]["ordinary"]
                            cell[0] += 1
                            cell[1] += near
                            if args.misses and half == "tune" and near:
                                print(f"  shown ({turn['type']}): {turn['text'][:110]!r}")
                            continue
                        cell = score[half][turn["type"]]
                        cell[0] += 1
                        cell[1] += near
                        cell[2] += whole
                        if args.misses and half == "tune" and not near:
                            print(f"  not shown ({turn['type']}): {turn['text'][:110]!r}")
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
    for half in ("tune", "held"):
        got = score[half]
        rules, facts, ordinary = got["rule"], got["fact"], got["ordinary"]
        print(f"{half}: rules shown {rules[1]}/{rules[0]} (word for word {rules[2]}), "
              f"project facts shown {facts[1]}/{facts[0]} (word for word {facts[2]}), "
              f"ordinary turns shown {ordinary[1]}/{ordinary[0]}")


if __name__ == "__main__":
    main()
