"""Ranked reads: a smart search's request from what its caller gave and the
configured defaults (the search policy), run, with the memories it ranked.

The weights a caller leaves out come from `retrieval`; the score threshold from
`reranker` when a cross-encoder scores relevance (its scores are on another scale),
else from `retrieval`."""

from __future__ import annotations

from dataclasses import dataclass

from memoryd.config import Config
from memoryd.engine.reads import Reads
from memoryd.errors import InvalidParams
from memoryd.filters import Filters
from memoryd.retrieval.pipeline import SearchResult
from memoryd.retrieval.query import Knobs, SearchRequest
from memoryd.schema import Memory


@dataclass
class Ranked:
    request: SearchRequest  # what ran, defaults filled in
    result: SearchResult
    memories: dict[str, Memory]  # the kept ones (every candidate's, for explain), by id
    reranked: bool  # a cross-encoder scored relevance


class SearchPolicy:
    def __init__(self, reads: Reads, config: Config, reranked: bool) -> None:
        self.reads = reads
        self.config = config
        self.reranked = reranked

    def request(self, query: str, where: Filters, top_k: int | None,
                knobs: Knobs) -> SearchRequest:
        """The request for `query` over `where`, with the caller's `knobs` (None: the
        configured default)."""
        r = self.config.retrieval
        req = SearchRequest(
            query=query, top_k=top_k or r.top_k, where=where,
            recency_weight=_given(knobs.recency_weight, r.recency_weight),
            importance_weight=_given(knobs.importance_weight, r.importance_weight),
            score_threshold=_given(knobs.score_threshold,
                                   self.config.reranker.score_threshold if self.reranked
                                   else r.score_threshold),
            mmr_lambda=_given(knobs.mmr_lambda, r.mmr_lambda), reference=knobs.reference)
        if req.recency_weight + req.importance_weight > 1:
            field = ("importance_weight" if knobs.importance_weight is not None
                     else "recency_weight")  # one the caller set, to lower
            raise InvalidParams(field, "recency_weight + importance_weight must be at most 1")
        return req

    async def search(self, query: str, where: Filters, top_k: int | None, knobs: Knobs,
                     *, every_candidate: bool = False) -> Ranked:
        req = self.request(query, where, top_k, knobs)
        result, memories = await self.reads.smart_search(req, every_candidate)
        return Ranked(req, result, memories, self.reranked)


def _given(value: float | None, default: float) -> float:
    return default if value is None else value
