"""Entities: a memory that names what the question names ranks higher ("what do
Melanie's kids like?": Melanie's own words before the turns that only speak to
her); one that names an entity beside the best of those a little higher (the second
hop: retrieval/entity_hops.py). A boost, never a filter, in proportion to how many
of the question's entities it names."""

from __future__ import annotations

from memoryd.retrieval.candidates import Ranking

WEIGHT = 0.1  # naming every entity the question names
HOP_WEIGHT = 0.05  # naming an entity the best of those name beside them


class Entities:
    name = "entities"

    def run(self, ranking: Ranking) -> None:
        if not ranking.named:
            return
        share = 1 / len(ranking.named)
        for c in ranking.candidates:
            named = sum(1 for group in ranking.named if any(k in c.named for k in group))
            boost = WEIGHT * share * named if named else (HOP_WEIGHT if c.hop else 0.0)
            if boost:
                c.staged[self.name] = round(boost, 4)
                c.score += boost
