"""Deterministic summaries (no model): a session's rolling summary from its current
facts and most important turns, and a compressed session in a few sentences."""

from __future__ import annotations

from memoryd.lang.sentences import sentences
from memoryd.schema import Memory

MAX_FACTS = 12
MAX_TURNS = 3
MAX_TURN_CHARS = 300


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def rolling(facts: list[Memory], turns: list[Memory]) -> str:
    """The newest facts, then the most important user turns, oldest first."""
    lines = [f"- {f.content}" for f in facts[-MAX_FACTS:]]
    users = [t for t in turns if t.role == "user"]
    best = sorted(users, key=lambda t: (-t.importance, t.created_at))[:MAX_TURNS]
    for turn in sorted(best, key=lambda t: t.created_at):
        lines.append(f"- {turn.created_at:%Y-%m-%d}: the user said "
                     f"\"{_short(turn.content, MAX_TURN_CHARS)}\"")
    return "\n".join(lines)


def compressed(turns: list[Memory]) -> str:
    """2-3 sentences of a session: the first sentence of its most important turns."""
    ranked = sorted(turns, key=lambda t: (-t.importance, t.created_at))
    picked: list[Memory] = []
    for turn in ranked:
        if sentences(turn.content):
            picked.append(turn)
        if len(picked) == 3:
            break
    parts = []
    for turn in sorted(picked, key=lambda t: t.created_at):
        first = _short(sentences(turn.content)[0], MAX_TURN_CHARS)
        parts.append(f"{turn.role or 'someone'} said: {first}")
    day = f"{turns[0].created_at:%Y-%m-%d}" if turns else ""
    return f"Conversation of {day}: " + " ".join(p.rstrip(".") + "." for p in parts)
