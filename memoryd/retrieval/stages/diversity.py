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
        lowest = min((c.score for c in ranking.selected), default=0.0)
        picked = [survivors[p] for p in picks]
        for i in survivors:
            c = candidates[i]
            if c.kept:
                continue
            c.reason = "not picked by MMR within top_k"
            if picked and c.score > lowest:  # a weaker one was picked: say why
                sims = ranking.vectors[picked] @ ranking.vectors[i]
                like = int(np.argmax(sims))
                c.reason = (f"pushed down by MMR: like {candidates[picked[like]].id} "
                            f"(cosine {float(sims[like]):.2f}), picked before it")
