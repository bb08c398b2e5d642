"""Blend: the score is (1 - wr - wi) x relevance + wr x recency + wi x importance,
recency exp(-age / 30 days); a candidate whose relevance is below the request's
`score_threshold` is dropped (with its reason)."""

from __future__ import annotations

import math

from memoryd.retrieval.candidates import Ranking

RECENCY_DAYS = 30.0


class Blend:
    name = "blend"

    def run(self, ranking: Ranking) -> None:
        req = ranking.request
        wr, wi = req.recency_weight, req.importance_weight
        for i, c in enumerate(ranking.candidates):
            age_days = max(0.0, (ranking.now - float(ranking.created[i])) / 86400)
            c.recency = math.exp(-age_days / RECENCY_DAYS)
            c.importance = float(ranking.importance[i])
            c.score = (1 - wr - wi) * c.relevance + wr * c.recency + wi * c.importance
            if c.relevance < req.score_threshold:
                c.reason = f"relevance {c.relevance:.3f} below score_threshold"
