"""Passages: a long note's keyword evidence counts for as much as the question's words
meet in one passage of it (a few consecutive lines), not spread over the whole note.
A changelog that says "plugins" in one entry and "features" in another is not about
adding features with plugins; the page about plugins is. The keyword score of a note
longer than one chunk is scaled by (the share of its matched query words that one
passage holds) ^ POWER, and its fused score with it; short notes and turns keep
theirs (they are one passage)."""

from __future__ import annotations

from collections.abc import Callable

from memoryd.retrieval import chunks, text
from memoryd.retrieval.candidates import Ranking
from memoryd.schema import Memory

WINDOW = 3  # lines: a bullet and the two after it, or three paragraphs
POWER = 1.5  # as the keyword score's coverage is raised (scoring.py)
SHORT = 1200  # characters: below this a note is one chunk whatever its words


class Passages:
    name = "passages"

    def __init__(self, fetch: Callable[[list[str]], list[Memory]],
                 lexical_weight: float) -> None:
        self.fetch = fetch
        self.lexical_weight = lexical_weight

    def run(self, ranking: Ranking) -> None:
        asked = set(ranking.terms)
        if len(asked) < 2 or not any(c.lexical > 0 for c in ranking.candidates):
            return
        docs = ranking.memories(self.fetch)
        for c in ranking.candidates:
            memory = docs.get(c.id)
            if c.lexical <= 0 or memory is None or len(memory.content) < SHORT or \
                    chunks.tokens(memory.content) <= chunks.MAX_TOKENS:
                continue
            share = passage_share(memory.content, asked)
            if share >= 1.0:
                continue
            lexical = c.lexical * share ** POWER
            fused = c.fused - self.lexical_weight * (c.lexical - lexical)
            c.combined *= fused / c.fused if c.fused > 0 else 1.0
            c.staged[self.name] = round(share, 4)
            c.lexical, c.fused = lexical, fused


def passage_share(content: str, asked: set[str]) -> float:
    """Of the query's terms `content` holds, the share the best WINDOW consecutive
    non-empty lines hold together (1.0: one passage holds them all)."""
    found = [set(text.terms(line)) & asked for line in content.splitlines() if line.strip()]
    whole = set().union(*found)
    if not whole:
        return 1.0
    best = max(len(set().union(*found[i:i + WINDOW])) for i in range(len(found)))
    return best / len(whole)
