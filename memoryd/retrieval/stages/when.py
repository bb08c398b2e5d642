"""When: a memory of the time the question names ("in May 2023", "last weekend",
"去年夏天": retrieval/timewords.py) ranks higher, one near that time a little higher,
one far from it not at all. A boost, never a filter: what was said about last
summer in September still counts by its relevance."""

from __future__ import annotations

import math

from memoryd.retrieval.candidates import Ranking

WEIGHT = 0.2  # the boost inside the window: as much as recency may weigh in a score
DAY = 86400.0


class When:
    name = "when"

    def run(self, ranking: Ranking) -> None:
        window = ranking.window
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
