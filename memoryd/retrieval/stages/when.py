"""When: a memory of the time the question names ("in May 2023", "last weekend",
"去年夏天": lang/timewords.py) ranks higher, one near that time a little higher,
one far from it not at all. A boost, never a filter: what was said about last
summer in September still counts by its relevance.

A question that asks for a time ("When did Ann move?") has its answer likelier in a
memory that says one ("we moved last week"): such a memory gains ASKED (as little as an
entity the question names does)."""

from __future__ import annotations

import math
from collections.abc import Callable

from memoryd.lang import timewords
from memoryd.retrieval.candidates import Ranking
from memoryd.schema import Memory

WEIGHT = 0.2  # the boost inside the window: as much as recency may weigh in a score
ASKED = 0.05  # a memory that says a time, for a question that asks for one
DAY = 86400.0


class When:
    name = "when"

    def __init__(self, fetch: Callable[[list[str]], list[Memory]]) -> None:
        self.fetch = fetch

    def run(self, ranking: Ranking) -> None:
        if ranking.query.asks_when:
            docs = ranking.memories(self.fetch)
            for c in ranking.candidates:
                memory = docs.get(c.id)
                if memory is not None and timewords.states_time(memory.content):
                    c.staged["says_when"] = ASKED
                    c.score += ASKED
        window = ranking.query.window
        if window is None:
            return
        start, end = window.start.timestamp(), window.end.timestamp()
        width = max((end - start) / DAY, 1.0)
        for i, c in enumerate(ranking.candidates):
            at = float(ranking.created[i])
            away = 0.0 if start <= at < end else min(abs(at - start), abs(at - end)) / DAY
            boost = WEIGHT * math.exp(-away / width)
            c.staged[self.name] = round(boost, 4)
            c.score += boost
