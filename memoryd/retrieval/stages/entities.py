"""Entities: a memory that names what the question names ranks higher ("what do
Melanie's kids like?": Melanie's own words before the turns that only speak to
her); one that names an entity beside the best of those a little higher (the second
hop: retrieval/entity_hops.py). A boost, never a filter, in proportion to how many
of the question's entities it names."""

from __future__ import annotations

from memoryd.retrieval.candidates import Ranking

# Naming every entity the question names. Small: a question may name the wrong person
# ("what did Ann realize after her race?" when it was Bob who ran), and what happened,
# told by someone else, must still rank near the top. Doubling it gained LoCoMo 0.2
# points of R@10 and lost 11 on its questions built that way (bench/README.md).
WEIGHT = 0.05
HOP_WEIGHT = 0.025  # naming an entity the best of those name beside them


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
