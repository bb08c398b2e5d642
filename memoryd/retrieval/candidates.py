"""What a smart search ranks: each candidate with its scores, and the
candidates struct the ranking stages read and write (retrieval/stages/)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memoryd.graph.expand import GraphMatch
from memoryd.retrieval.columns import RowMeta
from memoryd.retrieval.query import Query, SearchRequest
from memoryd.schema import Memory

__all__ = ["Candidate", "Ranking", "SearchRequest"]


@dataclass
class Candidate:
    id: str
    lexical: float
    dense: float
    dense_own: float
    dense_context: float
    fused: float
    neighbour_credit: float
    session_boost: float
    combined: float
    relevance: float = 0.0
    rerank: float | None = None
    recency: float = 0.0
    importance: float = 0.0
    score: float = 0.0
    rank: int | None = None
    kept: bool = False
    reason: str = ""
    graph: dict[str, Any] | None = None  # reached through this topic node (and edge)
    chunk: tuple[int, tuple[int, int]] | None = None  # a long note's best chunk (index, span)
    # What a stage without a field of its own scored, by the stage's name.
    staged: dict[str, float] = field(default_factory=dict)
    named: list[str] = field(default_factory=list)  # the query's entities it names
    hop: list[str] = field(default_factory=list)  # entities it shares with their best
    own: bool = False  # a turn of one the query names, saying something of themselves

    def scores(self) -> dict[str, Any]:
        """Every score it has, as memory_explain and memory_smart_search show them."""
        out: dict[str, Any] = {
            "lexical": self.lexical, "dense": self.dense, "dense_own": self.dense_own,
            "dense_context": self.dense_context, "fused": self.fused,
            "neighbour_credit": self.neighbour_credit, "session_boost": self.session_boost,
            "relevance": self.relevance, "recency": self.recency,
            "importance": self.importance, "score": self.score, **self.staged}
        if self.rerank is not None:
            out["rerank"] = self.rerank
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in out.items()}


@dataclass
class Ranking:
    """A search's pool of candidates, as every stage sees it. The arrays are the
    candidates' own vectors, creation times and importances, in the candidates' order
    (copied out of the corpus: a stage takes no lock); `rows` their metadata."""

    query: Query  # the question, read once
    now: float  # epoch seconds the search runs at
    candidates: list[Candidate]
    vectors: np.ndarray
    created: np.ndarray
    importance: np.ndarray
    topics: GraphMatch | None = None  # the topic nodes the query matched
    # Each candidate's row metadata (columns.py RowMeta: what its text says, read when
    # it was indexed), in the candidates' order.
    rows: list[RowMeta] = field(default_factory=list)
    selected: list[Candidate] = field(default_factory=list)  # the answer, in rank order
    _docs: dict[str, Memory] | None = field(default=None, repr=False)

    @property
    def request(self) -> SearchRequest:
        return self.query.request

    def memories(self, fetch: Callable[[list[str]], list[Memory]]) -> dict[str, Memory]:
        """The candidates' memories by id, read once for every stage that needs them
        (`fetch`: ids -> memories, the catalog's read)."""
        if self._docs is None:
            self._docs = {m.id: m for m in fetch([c.id for c in self.candidates])}
        return self._docs
