"""Recall: what a model should see for a query, as a `<memory>` block under a budget.

Procedural memories first (how to behave: the few most important, and those the query
ranked relevant; `choose`), then the ranked rest, then the
session's rolling summary when there is one, then the session's last turns verbatim
under [RECENT], oldest first. The budget goes to procedural memories first, then the
recent turns, the ranked memories and the summary; tokens are counted with the
embedder's tokenizer, and at least one a CHARS_PER_TOKEN characters (the tokenizer
counts a word of 100 characters or more, a hex dump or a blob, as one token), and
nothing that would overflow the budget is included.

What memories say is data, not the block's own structure: a `<memory>` or `</memory>`
inside one cannot open or close the block (its `<` becomes `‹`), every line of a
memory after its first is indented (no line of it can pass for an entry of its own,
`[PROCEDURAL]` or `[RECENT]`), and what was said in a conversation, and the facts
learned from it, stand in quotes as said.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from memoryd.lang.terms import terms
from memoryd.schema import Memory

OPEN, CLOSE = "<memory>", "</memory>"
RECENT = "[RECENT]"
CHARS_PER_TOKEN = 8  # a line costs at least one token for each this many characters
_TAG = re.compile(r"<(\s*/?\s*memory\b)", re.IGNORECASE)


def fenced(text: str) -> str:
    """`text` as it may stand inside the block: no tag of the block, continuation lines
    indented."""
    return "\n  ".join(_TAG.sub("‹\\1", text).splitlines())


_BLOCK = re.compile(re.escape(OPEN) + r".*?" + re.escape(CLOSE), re.DOTALL)


def without_block(text: str) -> str:
    """`text` without the `<memory>` blocks memoryd gave: a transcript that shows the
    context a hook added is not learned from again."""
    return _BLOCK.sub("", text).strip() if OPEN in text else text


def said(memory: Memory) -> bool:
    """What a conversation said, or was learned from one: quoted, never an instruction."""
    return memory.kind == "turn" or bool(memory.derived_from)


def line_for(memory: Memory, before: Memory | None = None) -> str:
    """A memory's line; `before`: the fact it replaced, shown for a question about
    change ("... (before: "The user lives in Paris." until 2024-03-01)")."""
    label = memory.type.upper()
    text = fenced(memory.content)
    if said(memory):
        text = f'{memory.role or "from a conversation"}: "{text}"'
    if before is not None:
        until = f" until {memory.created_at:%Y-%m-%d}"
        text += f' (before: "{fenced(before.content)}"{until})'
    if memory.type == "episodic":
        return f"[{label}] {memory.created_at:%Y-%m-%d}: {text}"
    return f"[{label}] {text}"


# What goes into a block beside the ranked memories, and what of the ranked stays out.
ALWAYS_PROCEDURAL = 2  # the most important procedural memories, shown whatever the query
RELEVANT = 0.3  # a procedural memory, or a reminder not yet due, this relevant is shown
RELATIVE = 0.5  # a ranked memory below this share of the best one's relevance is left out


def choose(procedural: list[Memory], ranked: list[tuple[Memory, float]], now: datetime
           ) -> tuple[list[Memory], list[Memory]]:
    """(the procedural memories to show first, the ranked memories to show) of a
    block, `ranked` with each memory's relevance (0-1). How to behave only when it
    matters: the few most important (then the newest) and those the query ranked
    relevant, never every one. Of the ranked: none far below the best answer (under RELATIVE of its
    relevance: in a small store everything passes the search's threshold); a reminder
    only when due or about the query; a conversation's turn not when a fact kept and
    ranked above it says what it said (the fact learned from it, `derived_from`): a
    fact left out, or further down, leaves the turn in."""
    best = max((relevance for _, relevance in ranked), default=0.0)
    relevant = {m.id for m, relevance in ranked if relevance >= RELEVANT}
    by_weight = sorted(procedural, key=lambda m: (-m.importance, -m.created_at.timestamp()))
    shown = by_weight[:ALWAYS_PROCEDURAL]
    shown += [m for m in by_weight if m.id in relevant and m not in shown]
    kept: list[Memory] = []
    told: set[str] = set()  # turns a kept fact above says
    for m, relevance in ranked:
        if relevance < RELATIVE * best or (m.kind == "turn" and m.id in told) or (
                m.kind == "reminder" and relevance < RELEVANT
                and (m.due_at is None or m.due_at > now)):
            continue
        kept.append(m)
        if m.kind == "fact":
            told.update(m.derived_from)
    return shown, kept


def _costs(count: Callable[[str, int], int]) -> Callable[[str, int], int]:
    """Tokens as `count` says, but never fewer than one a CHARS_PER_TOKEN characters."""
    return lambda text, limit: max(count(text, limit), -(-len(text) // CHARS_PER_TOKEN))


@dataclass
class Recalled:
    text: str
    memories: list[Memory] = field(default_factory=list)
    total_tokens: int = 0
    summary_included: bool = False
    recent: list[Memory] = field(default_factory=list)


def _words(text: str) -> tuple[str, ...]:
    """What a text says, word for word: its terms, case, stems and stop words aside."""
    return tuple(terms(text))


def assemble(procedural: list[Memory], ranked: list[Memory], summary: str | None,
             budget: int, top_k: int, count: Callable[[str, int], int],
             recent: list[Memory] | None = None,
             replaced: dict[str, Memory] | None = None) -> Recalled:
    """Procedural memories (all of them, budget allowing), the recent turns, up to
    `top_k` of the ranked rest, then the session summary. `count(text, limit)` may
    stop counting past `limit` (a huge memory is never tokenized whole)."""
    count = _costs(count)
    used = count(OPEN, budget) + count(CLOSE, budget)
    lines: list[str] = []
    picked: list[Memory] = []
    seen = {m.id for m in procedural}
    shown_recent = {m.id for m in recent or []}
    procedural_lines = []
    for memory in procedural:
        line = line_for(memory)
        cost = count(line, budget - used)
        if used + cost <= budget:
            procedural_lines.append(line)
            picked.append(memory)
            used += cost
    recent_lines: list[str] = []
    kept_recent: list[Memory] = []
    if recent:
        header = count(RECENT, budget - used)
        for memory in reversed(recent):  # the newest turns first, if not all fit
            line = f'{memory.role or "note"}: "{fenced(memory.content)}"'
            cost = count(line, budget - used)
            if used + header + cost > budget:
                break
            recent_lines.insert(0, line)
            kept_recent.insert(0, memory)
            used += cost
        if recent_lines:
            used += header
    lines.extend(procedural_lines)
    # Two memories in the same words are one line (a project's fact is kept in the
    # words of the turn it was learned from; a note written twice).
    said = {_words(m.content) for m in [*picked, *kept_recent]}
    ranked_taken = 0
    for memory in ranked:
        if memory.id in seen or memory.id in shown_recent:
            continue
        words = _words(memory.content)
        if words and words in said:
            continue
        if ranked_taken >= top_k:
            break
        line = line_for(memory, (replaced or {}).get(memory.id))
        cost = count(line, budget - used)
        if used + cost > budget:
            continue  # a smaller memory further down may still fit
        lines.append(line)
        picked.append(memory)
        said.add(words)
        used += cost
        ranked_taken += 1
    summary_included = False
    if summary:
        line = f"[SUMMARY] {fenced(summary.strip())}"
        cost = count(line, budget - used)
        if used + cost <= budget:
            lines.append(line)
            used += cost
            summary_included = True
    if recent_lines:
        lines += [RECENT, *recent_lines]
    if not lines:
        return Recalled(text="", total_tokens=0)
    return Recalled(text="\n".join([OPEN, *lines, CLOSE]), memories=picked,
                    total_tokens=used, summary_included=summary_included, recent=kept_recent)
