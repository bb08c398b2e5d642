"""Reconciliation: each new fact against the nearest facts already known.
ADD a new fact, UPDATE one it changes (the old one is superseded), DELETE
one it contradicts, NONE when it is already known.

Two deciders with one result shape: `heuristic` (no model: a near-duplicate is
NONE; the same subject and attribute with another value is UPDATE, by the frames
frames.py reads; a switch to a value like a known one by meaning is UPDATE; else ADD) and
`from_llm` (the `reconcile` task's answer, checked: unknown ids and malformed items
are dropped, and a new fact is never lost, whatever the model answered).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from memoryd.lang.frames import (
    changes,
    key_of,
    mentions,
    normal,
    old_value,
    switched_to,
    verb_object,
)
from memoryd.lang.sentences import has_han

EVENTS = ("ADD", "UPDATE", "DELETE", "NONE")


@dataclass
class Known:
    """An existing fact the new ones are compared with."""

    id: str
    text: str
    vector: np.ndarray | None = None


@dataclass
class Decision:
    text: str  # the fact (for DELETE and NONE: the known fact's text)
    event: str
    target: str | None  # the known fact it updates, deletes or duplicates
    reason: str


# The frames a switch may change: one value at a time, or any verb and its object
# when the fact has no other frame ("drinks cow's milk" -> "switched to oat milk").
_SWITCHABLE = frozenset(("location", "employer", "job", "one"))
# Two values of one kind by meaning ("linux" and "windows", "oat milk" and "cow's
# milk"): the cosine of the values' vectors at least this. With the shipped MiniLM,
# values of different kinds ("google" and "a choir", "android" and "berlin") stay
# below 0.4, and some of one kind do too ("vim" and "emacs"): then the switch is ADD.
ALIKE = 0.45
Alike = Callable[[str, str], float]  # two values -> the cosine of their vectors


def alike_by(embed: Callable[[list[str]], np.ndarray]) -> Alike:
    """Two values compared by the cosine of the vectors `embed` makes of them (the
    engine's embedder: its vectors are normalised)."""
    def cosine(a: str, b: str) -> float:
        va, vb = embed([a, b])
        return float(va @ vb)

    return cosine


def _switch(fact: str, target: str, known: list[Known], taken: set[str],
            alike: Alike) -> Decision | None:
    """An UPDATE of the known fact whose one-at-a-time value is most like `target`
    by meaning, when one is alike enough."""
    best: tuple[float, Known, str] | None = None
    own = key_of(fact)
    # "moved to Berlin" is a place: it changes a place, not another verb's object
    # ("visits Munich").
    place = own is not None and own[0][0] == "location"
    for k in known:
        other = key_of(k.text, True)
        if other is None and not place and (plain := verb_object(k.text)):
            other = ("one", plain[0]), plain[1]
        if k.id in taken or other is None or other[0][0] not in _SWITCHABLE \
                or other[1] == target:
            continue
        score = _alike(target, other[1], alike)
        if score >= ALIKE and (best is None or score > best[0]):
            best = (score, k, other[1])
    if best is None:
        return None
    score, k, old = best
    return Decision(fact, "UPDATE", k.id, f"switched to {target!r} from {old!r} (alike by "
                    f"meaning: cosine {score:.2f})")


def _alike(a: str, b: str, alike: Alike) -> float:
    """How alike two values are by meaning. Two Chinese values are of one kind when
    they end in the same noun ("安卓手机", "苹果手机": a compound's head comes last);
    the shipped model, an English one, puts unrelated Chinese close."""
    if has_han(a) or has_han(b):
        return 1.0 if len(a) > 2 and len(b) > 2 and a[-2:] == b[-2:] else 0.0
    return alike(a, b)


def _cosine(a: np.ndarray | None, b: np.ndarray | None) -> float:
    if a is None or b is None:
        return 0.0
    return float(a @ b)


def heuristic(new_facts: list[str], vectors: list[np.ndarray | None], known: list[Known],
              duplicate_cosine: float, alike: Alike | None = None) -> list[Decision]:
    """The decisions for `new_facts` against `known`. `alike` compares two values by
    meaning: with it, a fact that says what the user switched to but not from what
    ("switched to Linux") updates the known value of that kind ("uses Windows")."""
    decisions: list[Decision] = []
    taken: set[str] = set()
    for fact, vector in zip(new_facts, vectors, strict=True):
        cued = changes(fact)
        found = key_of(fact, cued)
        decision = None
        replaced = old_value(fact)
        if replaced is not None:  # it names the value it replaces: the fact holding it
            for k in known:
                if k.id not in taken and mentions(k.text, replaced) and \
                        normal(k.text) != normal(fact):
                    decision = Decision(fact, "UPDATE", k.id, f"replaces {replaced!r}")
                    break
        if decision is None and found is not None:
            for k in known:
                other = key_of(k.text, cued)
                if other is None or other[0] != found[0] or k.id in taken:
                    continue
                if other[1] != found[1]:
                    decision = Decision(fact, "UPDATE", k.id, f"same {found[0][0]}"
                                        f"{' of ' + found[0][1] if found[0][1] else ''},"
                                        f" new value: {other[1]!r} -> {found[1]!r}")
                else:
                    decision = Decision(k.text, "NONE", k.id, f"already known: same "
                                        f"{found[0][0]} and value")
                break
        if decision is None and alike is not None and (target := switched_to(fact)):
            decision = _switch(fact, target, known, taken, alike)
        if decision is None:
            for k in known:
                same = normal(k.text) == normal(fact)
                cosine = _cosine(vector, k.vector)
                if same or cosine >= duplicate_cosine:
                    decision = Decision(k.text, "NONE", k.id, "already known (identical)"
                                        if same else f"near-duplicate (cosine {cosine:.2f})")
                    break
        if decision is None:
            decision = Decision(fact, "ADD", None, "new information")
        if decision.target:
            taken.add(decision.target)
        decisions.append(decision)
    return decisions


class BadAnswer(ValueError):
    """The model's reconcile answer has not the contract's shape."""


def from_llm(answer: dict[str, Any], new_facts: list[str], short_ids: dict[str, str]
             ) -> list[Decision]:
    """The model's decisions, checked; short ids mapped back to memory ids.

    Bounded like any peer's answer: it adds or changes at most twice as many facts as
    it was given new ones (a fact may split in two; an answer of 2,000 ADDs writes no
    more than that), a text it
    repeats is taken once, and each known fact is changed or deleted at most once (a
    second UPDATE of one id would leave two current facts that both replace it: its
    text is added instead, so no fact is lost)."""
    items = answer.get("memory")
    if not isinstance(items, list):
        raise BadAnswer("the answer has no `memory` list")
    decisions: list[Decision] = []
    dropped: Counter[str] = Counter()
    targeted: set[str] = set()
    texts: set[str] = set()
    for item in items:
        if not isinstance(item, dict):
            dropped["an item that is not an object"] += 1
            continue
        event = str(item.get("event", "")).upper()
        text = item.get("text")
        text = " ".join(text.split())[:2000] if isinstance(text, str) else ""
        short = str(item.get("id", ""))[:40]
        if event not in EVENTS:
            dropped[f"unknown event {event[:40]!r}"] += 1
            continue
        target = short_ids.get(short) if event != "ADD" else None
        if event == "UPDATE" and text and (target is None or target in targeted):
            why = "unknown id" if target is None else "an id already changed"
            event, target = "ADD", None  # a fact is never lost to a bad id
            reason = f"llm: UPDATE of {why} {short!r}, added"
        else:
            reason = {"ADD": "llm: new information", "UPDATE": "llm: changes a known fact",
                      "DELETE": "llm: contradicted", "NONE": "llm: already known"}[event]
        if event == "ADD" or event == "UPDATE":
            if not text:
                dropped[f"{event} without text"] += 1
                continue
            if normal(text) in texts:
                dropped["a text given twice"] += 1
                continue
            if sum(d.event in ("ADD", "UPDATE") for d in decisions) >= 2 * len(new_facts):
                dropped["more new facts than were given"] += 1
                continue
            texts.add(normal(text))
        if event != "ADD":
            if target is None:
                dropped[f"{event} of unknown id"] += 1
                continue
            if event != "NONE" and target in targeted:
                dropped[f"a second {event} of one id"] += 1
                continue
            if event != "NONE":
                targeted.add(target)
        decisions.append(Decision(text, event, target, reason))
    if not any(d.event in ("ADD", "UPDATE", "NONE") for d in decisions):
        # Only deletes (or nothing usable): the new facts are added all the same.
        why = "llm answered only deletes" if decisions else "llm gave no usable decision"
        decisions += [Decision(f, "ADD", None, f"{why}; the new fact is kept")
                      for f in new_facts]
    if dropped and decisions:
        decisions[0].reason += " (ignored: " + "; ".join(
            f"{n} × {what}" if n > 1 else what for what, n in dropped.most_common()) + ")"
    return decisions
