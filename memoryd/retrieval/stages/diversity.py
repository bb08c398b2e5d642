"""Diversity: MMR over the candidates' own vectors picks the answer, `top_k` of those
no stage dropped, trading score (`mmr_lambda`) against likeness to those picked."""

from __future__ import annotations

import numpy as np

from memoryd.retrieval import scoring
from memoryd.retrieval.candidates import Ranking


class Diversity:
    name = "mmr"

    def run(self, ranking: Ranking) -> None:
        candidates = ranking.candidates
        survivors = [i for i, c in enumerate(candidates) if not c.reason]
        picks = scoring.mmr(np.array([candidates[i].score for i in survivors], np.float32),
                            ranking.vectors[survivors], ranking.request.top_k,
                            ranking.request.mmr_lambda)
        for rank, p in enumerate(picks):
            c = candidates[survivors[p]]
            c.kept, c.rank, c.reason = True, rank + 1, "selected"
            ranking.selected.append(c)
        for i in survivors:
            if not candidates[i].kept:
                candidates[i].reason = "not picked by MMR within top_k"
