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
from memoryd.retrieval.pipeline import SearchRequest, SearchResult
from memoryd.schema import Memory

# What a caller may set per call; each read from `given` by name, None: the default.
KNOBS = ("recency_weight", "importance_weight", "score_threshold", "mmr_lambda",
         "reference")


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
                given: object) -> SearchRequest:
        """The request for `query` over `where`; `given` holds the caller's KNOBS
        (an attribute missing or None: the configured default)."""
        r = self.config.retrieval
        req = SearchRequest(
            query=query, top_k=top_k or r.top_k, where=where,
            recency_weight=r.recency_weight, importance_weight=r.importance_weight,
            score_threshold=(self.config.reranker.score_threshold if self.reranked
                             else r.score_threshold), mmr_lambda=r.mmr_lambda)
        for name in KNOBS:
            value = getattr(given, name, None)
            if value is not None:
                setattr(req, name, value)
        if req.recency_weight + req.importance_weight > 1:
            field = ("importance_weight" if hasattr(given, "importance_weight")
                     else "recency_weight")  # the one the caller can lower
            raise InvalidParams(field, "recency_weight + importance_weight must be at most 1")
        return req

    async def search(self, query: str, where: Filters, top_k: int | None, given: object,
                     *, every_candidate: bool = False) -> Ranked:
        req = self.request(query, where, top_k, given)
        result, memories = await self.reads.smart_search(req, every_candidate)
        return Ranked(req, result, memories, self.reranked)
