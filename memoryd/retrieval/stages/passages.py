"""Passages: a long note's keyword evidence counts for as much as the question's words
meet in one passage of it (a few consecutive lines), not spread over the whole note.
A changelog that says "plugins" in one entry and "features" in another is not about
adding features with plugins; the page about plugins is. The keyword score of a note
longer than one chunk is scaled by (the share of its matched query words that one
passage holds) ^ POWER, and its fused score with it, and so is a long turn's (an
assistant's answer that names the question's words in different paragraphs does not
outrank the user's short statement of them); a shorter note or turn is one passage
and keeps its score."""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Callable

from memoryd.lang import terms
from memoryd.retrieval.candidates import Ranking
from memoryd.schema import Memory

WINDOW = 3  # lines: a bullet and the two after it, or three paragraphs
POWER = 1.5  # as the keyword score's coverage is raised (scoring.py)
SHORT = 1200  # characters: a shorter note is one passage (about a chunk's length)
# Characters above which a note's lines are read whole and kept (`_LINES`): a long note
# a query ranks is often ranked by the next ones too. A shorter text (a long turn, an
# assistant's answer) is read for the query's terms alone, twice as fast, and kept for
# none: there are thousands of them, each ranked now and then.
CACHED = 16_000


class Passages:
    name = "passages"

    def __init__(self, fetch: Callable[[list[str]], list[Memory]],
                 lexical_weight: float) -> None:
        self.fetch = fetch
        self.lexical_weight = lexical_weight

    def run(self, ranking: Ranking) -> None:
        asked = set(ranking.query.terms)
        if len(asked) < 2 or not any(c.lexical > 0 for c in ranking.candidates):
            return
        docs = ranking.memories(self.fetch)
        for c in ranking.candidates:
            memory = docs.get(c.id)
            if c.lexical <= 0 or memory is None or len(memory.content) < SHORT:
                continue
            share = passage_share(memory.content, asked, memory.content_hash or None)
            if share >= 1.0:
                continue
            lexical = c.lexical * share ** POWER
            fused = c.fused - self.lexical_weight * (c.lexical - lexical)
            c.combined *= fused / c.fused if c.fused > 0 else 1.0
            c.staged[self.name] = round(share, 4)
            c.lexical, c.fused = lexical, fused


def passage_share(content: str, asked: set[str], key: str | None = None) -> float:
    """Of the query's terms `content` holds, the share the best WINDOW consecutive
    non-empty lines hold together (1.0: one passage holds them all). `key` (the
    content's hash) keeps the note's lines read for the next query."""
    if key and len(content) > CACHED:
        lines = _LINES.get(key, content)
        held = [lines[t] for t in asked if t in lines]
    else:
        held = list(_read_lines(content, asked).values())
    if not held:
        return 1.0
    covered: Counter[int] = Counter()
    for at in held:  # each term once per window start that reaches one of its lines
        covered.update({max(line - back, 0) for line in at for back in range(WINDOW)})
    return max(covered.values()) / len(held)


def _read_lines(content: str, asked: set[str] | None = None) -> dict[str, list[int]]:
    """Each term of `content` (of the `asked` ones, when given) -> the numbers of the
    non-empty lines that hold it."""
    found: dict[str, list[int]] = {}
    count = 0
    for line in content.splitlines():
        if not line.strip():
            continue
        for term in terms.terms(line):
            if asked is None or term in asked:
                at = found.setdefault(term, [])
                if not at or at[-1] != count:  # a line once, however often it says it
                    at.append(count)
        count += 1
    return found


class _Lines:
    """The last notes' lines read (_read_lines), by content hash: a long note a query
    ranks is often ranked by the next ones too (reading a 200 KB changelog's lines
    takes 20-30 ms, scoring them a query's terms well under one)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._kept: OrderedDict[str, dict[str, list[int]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str, content: str) -> dict[str, list[int]]:
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
                return kept
        made = _read_lines(content)  # outside the lock: readers run side by side
        with self._lock:
            self._kept[key] = made
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)
        return made


_LINES = _Lines(256)
