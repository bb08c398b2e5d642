"""Words that place what is said before now, English and Chinese: one table, read three
ways.

- A statement that tells of the past ("we went", "yesterday", "上周") asks for no
  reminder, whatever time it names (`tells_past`, read by intents.py).
- A question about the past ("did", "used to", "in 2019", "以前") wants the fact that
  was current then, not the newest (`asks_past`, the `current` ranking stage).
- A question about a change ("before", "moved", "no longer", "换") is shown what a fact
  replaced beside it (`asks_change`, recall's block).

English words match whole, in casefolded text."""

from __future__ import annotations

import re

# A past form of "be" or "do": a past event or state, told or asked about.
WAS = ("was", "were", "did")
AGO = ("ago",)
# How a story of what happened is told; a plan is never written so.
TOLD = ("had", "went", "happened", "last", "yesterday")
# What held before now, as a question asks for it.
EARLIER = ("used to", "before", "previously", "formerly", "originally")
THEN = ("back then", "earlier")
# A change from what held: the words that say one, and what it changed from.
FROM = ("previous", "former", "original", "old")
CHANGED = ("change", "changed", "changes", "moved", "switch", "switched",
           "no longer", "anymore", "any more", "still", "until", "since")

ZH_TOLD = ("上周", "上个", "昨天", "前天", "去年")
ZH_EARLIER = ("以前", "之前", "原来")
ZH_THEN = ("当时",)
ZH_CHANGED = ("换", "变")

_YEAR = r"\d{4}"


def _words(*groups: tuple[str, ...], also: str = "") -> str:
    alternatives = [re.escape(w) for group in groups for w in group] + ([also] if also else [])
    return rf"(?<![a-z])(?:{'|'.join(alternatives)})(?![a-z])"


def _zh(*groups: tuple[str, ...]) -> str:
    return "|".join(w for group in groups for w in group)


_TELLS_PAST = re.compile(rf"{_words(WAS, TOLD, AGO)}|{_zh(ZH_TOLD)}|了$")
_ASKS_PAST = re.compile(rf"{_words(WAS, EARLIER, THEN, AGO, also=_YEAR)}|"
                        rf"{_zh(ZH_EARLIER, ZH_THEN)}")
_ASKS_CHANGE = re.compile(rf"{_words(EARLIER, FROM, CHANGED)}|{_zh(ZH_EARLIER, ZH_CHANGED)}")


def tells_past(sentence: str) -> bool:
    """Whether a statement tells of the past (`sentence` casefolded)."""
    return bool(_TELLS_PAST.search(sentence))


def asks_past(question: str) -> bool:
    """Whether a question asks about the past ("did", "used to", a year, "以前")."""
    return bool(_ASKS_PAST.search(question.casefold()))


def asks_change(question: str) -> bool:
    """Whether a question asks about a change ("where did the user live before?")."""
    return bool(_ASKS_CHANGE.search(question.casefold()))
