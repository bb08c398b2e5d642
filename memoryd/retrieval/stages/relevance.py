"""Relevance, 0-1: a cross-encoder's score of the query against each candidate's text
(a long note's matching chunk) when one is configured, else the fused score scaled."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from memoryd.retrieval.candidates import Ranking
from memoryd.schema import Memory

if TYPE_CHECKING:
    from memoryd.ports import Reranker

# s2 of a memory outside a conversation is 1.3 x its fused score; dividing by it puts
# such a memory's relevance on the fused (cosine-like) scale.
RELEVANCE_SCALE = 1.3


class Relevance:
    def __init__(self, reranker: Reranker | None,
                 fetch: Callable[[list[str]], list[Memory]]) -> None:
        self.reranker = reranker
        self.fetch = fetch  # ids -> memories, for the texts a reranker reads

    @property
    def name(self) -> str:
        return "rerank" if self.reranker is not None else "relevance"

    def run(self, ranking: Ranking) -> None:
        candidates = ranking.candidates
        if self.reranker is None or not candidates:
            for c in candidates:
                c.relevance = min(1.0, max(0.0, c.combined / RELEVANCE_SCALE))
            return
        docs = ranking.memories(self.fetch)
        pairs = [(ranking.query.text,
                  _passage(docs[c.id].content, c.chunk) if c.id in docs else "")
                 for c in candidates]
        for c, score in zip(candidates, self.reranker.score(pairs), strict=True):
            c.rerank = c.relevance = float(score)


def _passage(content: str, chunk: tuple[int, tuple[int, int]] | None) -> str:
    """What the cross-encoder reads: a long note's matching chunk, else the content."""
    return content[chunk[1][0]:chunk[1][1]] if chunk else content
