"""Reconciliation: each new fact against the nearest facts already known.
ADD a new fact, UPDATE one it changes (the old one is superseded), DELETE
one it contradicts, NONE when it is already known.

Two deciders with one result shape: `heuristic` (no model: a near-duplicate is
NONE; the same subject and attribute with another value is UPDATE; else ADD) and
`from_llm` (the `reconcile` task's answer, checked: unknown ids and malformed items
are dropped, and a new fact is never lost, whatever the model answered).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

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


# -- the subject and attribute a fact is about ------------------------------------------
_TAIL = re.compile(r"\s+(now|anymore|any more|these days|nowadays|instead|recently|"
                   r"yesterday|today|last (?:week|month|year|summer|winter|spring|fall)|"
                   r"this (?:week|month|year)|(?:a few|a couple of|\d+|two|three) "
                   r"(?:days|weeks|months|years) ago)$|[.!。！]+$")
# Words that say a value changed: with one, two facts in one frame are an update even
# where the frame alone cannot tell ("The user now drives a Tesla").
_CHANGE_CUE = re.compile(r"\b(now|no longer|not any more|anymore|instead|switched|"
                         r"changed|new|these days|from now on|started|stopped|quit|"
                         r"sold|gave up|replaced)\b|现在|不再|换成|改成|新的")
# "switched from X to Y", "used to X but now Y", "no longer X": the old value, named.
_OLD_VALUE = (
    re.compile(r"\b(?:switched|changed|moved|went|upgraded|converted|migrated) from "
               r"(?:the |a |an |their )?(?P<old>.+?) to (?P<new>.+)$"),
    re.compile(r"\bused to (?:\w+ )?(?:in |at |a |an |the )?(?P<old>.+?),? but "
               r"(?:now )?(?P<new>.+)$"),
    re.compile(r"\b(?:sold|gave up|quit|left|stopped using|got rid of) "
               r"(?:the |a |an |their )?(?P<old>.+?) and (?:now )?(?P<new>.+)$"),
    re.compile(r"\bno longer \w+ (?:in |at |a |an |the )?(?P<old>.+)$"),
    re.compile(r"\b(?:traded|swapped|exchanged)(?: in)? (?:the |a |an |their )?(?P<old>.+?) "
               r"for (?P<new>.+)$"),
    re.compile(r"\breplaced (?:the |a |an |their )?(?P<old>.+?) with (?P<new>.+)$"),
)
_NUMBERS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
            "ten", "eleven", "twelve")
# How many of a thing: "The user has three kids" (a/an is an item, not a count:
# "The user also has a cat" is one more, an ADD).
_COUNT = re.compile(rf"^the user (?:now |also |still )*(?:has|owns|keeps|have|own|keep) (?:got )?"
                    rf"(?P<v>\d+|{'|'.join(_NUMBERS)}) (?P<k>[a-z]+?)(?:s|es)?(?: now)?$")
# A verb frame that holds one value at a time, decided only with a change cue.
_ONE_AT_A_TIME = re.compile(r"^the user (?:now |currently |also |still )*(?P<k>drives|rides|"
                            r"uses|is using|studies|is studying|is learning|plays for|"
                            r"works on|is dating|is married to|is engaged to|supports|"
                            r"banks with|votes for|owns) (?:a |an |the |their )?(?P<v>.+)$")
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("location", re.compile(r"^the user (?:now |currently |recently |just |finally |has "
                            r"|had )*(?:lives|lived|moved|relocated|is living|been living|"
                            r"is based|been based|resides|stays|is staying|is moving|"
                            r"settled|is settling|has moved) (?:in|to|back to|into|over to)"
                            r" (?P<v>.+)$")),
    ("employer", re.compile(r"^the user (?:now |currently |just |recently |has |finally )*"
                            r"(?:(?:works|worked|is working|been working|started working) "
                            r"(?:at|for)|is employed (?:at|by)|(?:was|got|been) hired (?:at|"
                            r"by)|(?:took|got|started|accepted) (?:a |an )?(?:new )?(?:job|"
                            r"position|role) (?:at|with)|accepted (?:a |an )?(?:job )?offer "
                            r"(?:from|at)) (?P<v>.+)$")),
    ("job", re.compile(r"^the user (?:now |currently )*works as (?:an? )?(?P<v>.+)$")),
    ("age", re.compile(r"^the user (?:just |recently |has )*(?:is|turned|is turning) "
                       r"(?P<v>\d+)(?: years old)?$")),
    ("name", re.compile(r"^the user(?:'s name is| is called| is named| goes by) (?P<v>.+)$")),
    ("sentiment", re.compile(r"^the user (?:really |absolutely |still |also |truly )*"
                             r"(?P<v>loves|likes|enjoys|adores|hates|dislikes|detests|"
                             r"prefers|doesn't like|does not like|can't stand|cannot "
                             r"stand|no longer likes) (?P<k>.+)$")),
    ("attribute", re.compile(r"^the user's (?:new |current |latest |updated |present )?"
                             r"(?P<k>.+?) (?:is|are|was|were) (?:named |called"
                             r" |now )?(?P<v>.+)$")),
    ("location", re.compile(r"^用户(?:现在|目前|已经)*"
                            r"(?:住在|搬到了|搬到|搬去了|搬去|定居在|生活在)(?P<v>.+?)了?$")),
    ("sentiment", re.compile(r"^用户(?:很|最|非常|特别|还是)*(?P<v>不喜欢|喜欢|讨厌|爱|受不了)"
                             r"(?P<k>.+?)了?$")),
    ("attribute", re.compile(r"^用户的(?P<k>.+?)是(?P<v>.+?)了?$")),
    ("employer", re.compile(r"^用户(?:现在|目前|已经|刚)*(?:在|去|加入了?)(?P<v>.+?)"
                            r"(?:工作|上班|任职)了?$")),
)
# What a fact says the user changed to, without naming what it replaced ("switched to
# Linux", "moved over to Firefox", "started using Obsidian", "joined Microsoft").
_SWITCHED_TO = re.compile(
    r"^the user (?:now |just |recently |finally |has |had )*(?:(?:switched|changed|moved|"
    r"migrated|converted|upgraded|went)(?: over)? to|started using|joined) "
    r"(?:a |an |the )?(?P<v>.+)$")
# The frames a switch may change: one value at a time, or any verb and its object
# when the fact has no other frame ("drinks cow's milk" -> "switched to oat milk").
_SWITCHABLE = frozenset(("location", "employer", "job", "one"))
_VERB_OBJECT = re.compile(r"^the user (?:now |currently |usually |always |still |mostly )*"
                          r"(?P<k>[a-z]+s) (?:a |an |the |their )?(?P<v>[^,;]+)$")
# Two values of one kind by meaning ("linux" and "windows", "oat milk" and "cow's
# milk"): the cosine of the values' vectors at least this. With the shipped MiniLM,
# values of different kinds ("google" and "a choir", "android" and "berlin") stay
# below 0.4, and some of one kind do too ("vim" and "emacs"): then the switch is ADD.
ALIKE = 0.45
Alike = Callable[[str, str], float]  # two values -> the cosine of their vectors
# Words a search for facts about the same attribute can use (the engine looks them up).
KEY_TERMS = {"location": ["lives", "moved", "住在", "搬到"], "employer": ["works"],
             "job": ["works as"], "age": ["years old"], "name": ["name"]}


_LEAD = re.compile(r"^(?:these days|nowadays|now|currently|recently|today|lately),? ")
# A time or place said before the subject: "Since June the user has been living in Rome",
# "As of this month, the user ...".
_ADVERBIAL = re.compile(r"^(?:since|as of|from|starting|after|before|in|on|at|for|by|last|"
                        r"this|next|over|during|early|late|earlier|later|a few|\d+)\b"
                        r"[^,.;:]{0,40}?,? (?=the user\b)")
# "We have three dogs" is read as the user's: "the user and family have" -> "the user has".
_PLURAL = re.compile(r"^the user ((?:now |also |still |just |recently |currently )*)"
                     r"(have|are|were|own|keep|live|work)\b")
_SINGULAR = {"have": "has", "are": "is", "were": "was", "own": "owns", "keep": "keeps",
             "live": "lives", "work": "works"}
_SPELLING = {"favourite": "favorite", "colour": "color", "the user and family": "the user"}


def _normal(text: str) -> str:
    text = _LEAD.sub("", " ".join(text.casefold().split()))
    for variant, spelling in _SPELLING.items():
        text = text.replace(variant, spelling)
    text = _ADVERBIAL.sub("", text)
    text = _PLURAL.sub(lambda m: f"the user {m[1]}{_SINGULAR[m[2]]}", text)
    while True:
        trimmed = _TAIL.sub("", text).strip()
        if trimmed == text:
            return text
        text = trimmed


def key_of(fact: str, cued: bool = False) -> tuple[tuple[str, str], str] | None:
    """((attribute, subject), value) of a fact, when it has that shape. With `cued`
    (the fact says a value changed), frames that hold one value at a time are read
    too ("drives", "uses"...): without a cue two such facts may both hold."""
    text = _normal(fact)
    for attribute, rule in _RULES:
        match = rule.match(text)
        if match and not _manner(fact, match["v"]):
            groups = match.groupdict()
            return (attribute, groups.get("k") or ""), groups["v"].strip()
    count = _COUNT.match(text)
    if count:
        return ("count", count["k"]), count["v"]
    one = _ONE_AT_A_TIME.match(text) if cued else None
    if one:
        return ("one", one["k"]), one["v"].strip()
    return None


def _manner(fact: str, value: str) -> bool:
    """A value that opens with how, not what: "settled in quickly at work" (an adverb,
    lower case where the fact wrote it; "Italy" is a name, "family" a noun)."""
    first = value.split(" ", 1)[0]
    return (len(first) > 3 and first.endswith("ly") and first != "family"
            and re.search(rf"(?<![\w]){re.escape(first)}(?![\w])", fact) is not None)


def changes(fact: str) -> bool:
    """Whether a fact says a value changed ("now", "no longer", "switched"...)."""
    return bool(_CHANGE_CUE.search(" ".join(fact.casefold().split())))


def old_value(fact: str) -> str | None:
    """The value a fact says was replaced ("switched from vim to VS Code": "vim")."""
    text = _normal(fact)
    for rule in _OLD_VALUE:
        found = rule.search(text)
        if found:
            old = found["old"].strip(" ,")
            return old if 2 <= len(old) <= 80 else None
    return None


def switched_to(fact: str) -> str | None:
    """The value a fact says the user changed to, when it does not say from what."""
    found = _SWITCHED_TO.match(_normal(fact))
    return found["v"].strip() if found else None


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
        if other is None and not place and (plain := _VERB_OBJECT.match(_normal(k.text))):
            other = ("one", plain["k"]), plain["v"].strip()
        if k.id in taken or other is None or other[0][0] not in _SWITCHABLE \
                or other[1] == target:
            continue
        score = alike(target, other[1])
        if score >= ALIKE and (best is None or score > best[0]):
            best = (score, k, other[1])
    if best is None:
        return None
    score, k, old = best
    return Decision(fact, "UPDATE", k.id, f"switched to {target!r} from {old!r} (alike by "
                    f"meaning: cosine {score:.2f})")


def _mentions(text: str, value: str) -> bool:
    """Whether `text` names `value` (as words, case aside)."""
    return bool(re.search(rf"(?<!\w){re.escape(value)}(?!\w)", _normal(text)))


def search_terms(fact: str) -> list[str]:
    """Words to find known facts about the same thing (beyond the nearest ones)."""
    found = key_of(fact)
    if found is None:
        return []
    (attribute, subject), _ = found
    if subject:
        return [subject]
    return KEY_TERMS.get(attribute, [])


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
                if k.id not in taken and _mentions(k.text, replaced) and \
                        _normal(k.text) != _normal(fact):
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
                same = _normal(k.text) == _normal(fact)
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
            if _normal(text) in texts:
                dropped["a text given twice"] += 1
                continue
            if sum(d.event in ("ADD", "UPDATE") for d in decisions) >= 2 * len(new_facts):
                dropped["more new facts than were given"] += 1
                continue
            texts.add(_normal(text))
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
