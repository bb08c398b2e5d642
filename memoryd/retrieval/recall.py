"""Recall: what a model should see for a query, as a `<memory>` block under a budget.

Procedural memories first (how to behave), then the ranked rest, then the
session's rolling summary when there is one; tokens are counted with the
embedder's tokenizer and nothing that would overflow the budget is included.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from memoryd.schema import Memory

OPEN, CLOSE = "<memory>", "</memory>"


def line_for(memory: Memory) -> str:
    label = memory.type.upper()
    if memory.type == "episodic":
        return f"[{label}] {memory.created_at:%Y-%m-%d}: {memory.content}"
    return f"[{label}] {memory.content}"


@dataclass
class Recalled:
    text: str
    memories: list[Memory] = field(default_factory=list)
    total_tokens: int = 0
    summary_included: bool = False


def assemble(procedural: list[Memory], ranked: list[Memory], summary: str | None,
             budget: int, top_k: int, count: Callable[[str, int], int]) -> Recalled:
    """Procedural memories (all of them, budget allowing), then up to `top_k` of the
    ranked rest, then the session summary. `count(text, limit)` may stop counting
    past `limit` (a huge memory is never tokenized whole)."""
    used = count(OPEN, budget) + count(CLOSE, budget)
    lines: list[str] = []
    picked: list[Memory] = []
    seen = {m.id for m in procedural}
    ordered = [*procedural, *(m for m in ranked if m.id not in seen)]
    ranked_taken = 0
    for memory in ordered:
        is_ranked = memory.id not in seen
        if is_ranked and ranked_taken >= top_k:
            break
        line = line_for(memory)
        cost = count(line, budget - used)
        if used + cost > budget:
            continue  # a smaller memory further down may still fit
        lines.append(line)
        picked.append(memory)
        used += cost
        ranked_taken += is_ranked
    summary_included = False
    if summary:
        line = f"[SUMMARY] {summary.strip()}"
        cost = count(line, budget - used)
        if used + cost <= budget:
            lines.append(line)
            used += cost
            summary_included = True
    if not lines:
        return Recalled(text="", total_tokens=0)
    return Recalled(text="\n".join([OPEN, *lines, CLOSE]), memories=picked,
                    total_tokens=used, summary_included=summary_included)
