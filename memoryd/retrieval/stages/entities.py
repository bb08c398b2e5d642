"""Entities: a memory that names what the question names ranks higher ("what do
Melanie's kids like?": Melanie's own words before the turns that only speak to
her); one that names an entity beside the best of those a little higher (the second
hop: retrieval/entity_hops.py). A boost, never a filter, in proportion to how many
of the question's entities it names. A turn in which one the question names says
something of themselves ("I started a yoga class", not "Thanks, Maria!") counts as
naming them once more: what a person tells of themselves is what a question about
them is answered by, spread over every session they spoke in. A question about the
one asking ("Which running shoes do I like?") names the conversation's user with no
name to read: their own turns and the facts learned from them count alike."""

from __future__ import annotations

from collections.abc import Callable

from memoryd.retrieval.candidates import Ranking
from memoryd.schema import Memory

# Naming every entity the question names. Small: a question may name the wrong person
# ("what did Ann realize after her race?" when it was Bob who ran), and what happened,
# told by someone else, must still rank near the top. Doubling it gained LoCoMo 0.2
# points of R@10 and lost 11 on its questions built that way (bench/README.md).
WEIGHT = 0.05
HOP_WEIGHT = 0.025  # naming an entity the best of those name beside them
# Their own words about themselves (Candidate.own). Above the entities' weight the
# questions that name the wrong person lose more than multi-hop gains (bench/README.md).
OWN_WEIGHT = WEIGHT
# A question about the one asking ("I", "my"; lang/asking.py of_the_asker): the user's
# own turns and the facts learned from them, the first person's counterpart of OWN,
# weighed alike.
ASKER_WEIGHT = OWN_WEIGHT


class Entities:
    name = "entities"

    def __init__(self, fetch: Callable[[list[str]], list[Memory]]) -> None:
        self.fetch = fetch  # ids -> memories: their roles and kinds

    def run(self, ranking: Ranking) -> None:
        if ranking.query.of_the_asker:
            memories = ranking.memories(self.fetch)
            for c in ranking.candidates:
                if said_by_the_user(memories.get(c.id)):
                    c.staged["asker"] = ASKER_WEIGHT
                    c.score += ASKER_WEIGHT
        if not ranking.query.named:
            return
        share = 1 / len(ranking.query.named)
        for c in ranking.candidates:
            named = sum(1 for group in ranking.query.named if any(k in c.named for k in group))
            boost = WEIGHT * share * named if named else (HOP_WEIGHT if c.hop else 0.0)
            boost += OWN_WEIGHT if c.own else 0.0
            if boost:
                c.staged[self.name] = round(boost, 4)
                c.score += boost


def said_by_the_user(memory: Memory | None) -> bool:
    """The user's own turn, or a fact learned from what was said."""
    return memory is not None and (memory.role == "user" or memory.kind == "fact")
