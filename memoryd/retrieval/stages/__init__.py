"""The ranking stages a smart search runs, in order, over its pool of candidates
(retrieval/candidates.py Ranking), after the pool is gathered from the corpus.

A stage is a unit: it reads the candidates and writes their scores (its own field
of Candidate, or `staged[name]`, which memory_explain shows as it is), its reasons
(why one was dropped) and, last, the selection. Its `name` is its key in
`timings_ms`. A new stage is a module here and its line in `stages` below."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from memoryd.retrieval.candidates import Ranking
from memoryd.retrieval.stages.blend import Blend
from memoryd.retrieval.stages.current import Current
from memoryd.retrieval.stages.diversity import Diversity
from memoryd.retrieval.stages.entities import Entities
from memoryd.retrieval.stages.passages import Passages
from memoryd.retrieval.stages.relevance import Relevance
from memoryd.retrieval.stages.topics import Topics
from memoryd.retrieval.stages.when import When
from memoryd.schema import Memory

if TYPE_CHECKING:
    from memoryd.ports import Reranker


class Stage(Protocol):
    @property
    def name(self) -> str: ...

    def run(self, ranking: Ranking) -> None: ...


def stages(reranker: Reranker | None, fetch: Callable[[list[str]], list[Memory]],
           lexical_weight: float) -> list[Stage]:
    """The stages, in the order they run (`lexical_weight`: fusion's, scoring.Recipe)."""
    return [Topics(), Passages(fetch, lexical_weight), Relevance(reranker, fetch), Blend(),
            Entities(fetch), When(fetch), Current(fetch), Diversity()]
