"""The ranking stages: each reads the pool of candidates and writes its scores, in the
order of the stage list; a stage added to the list is run, timed and shown by
memory_explain with no other change."""

from __future__ import annotations

import numpy as np

from memoryd.retrieval.candidates import Candidate, Ranking, SearchRequest
from memoryd.retrieval.stages import stages
from memoryd.retrieval.stages.blend import Blend
from memoryd.retrieval.stages.diversity import Diversity
from memoryd.retrieval.stages.relevance import Relevance

NOW = 1_800_000_000.0
DAY = 86400.0


def _pool(combined: list[float], ages_days: list[float], vectors: list[list[float]],
          **request: float) -> Ranking:
    candidates = [Candidate(id=f"m{i}", lexical=0, dense=0, dense_own=0, dense_context=0,
                            fused=c, neighbour_credit=0, session_boost=0, combined=c)
                  for i, c in enumerate(combined)]
    return Ranking(SearchRequest(query="q", top_k=2, **request), NOW, candidates,
                   np.array(vectors, dtype=np.float32),
                   np.array([NOW - a * DAY for a in ages_days]),
                   np.full(len(combined), 0.5, dtype=np.float32))


def _ranked(ranking: Ranking) -> Ranking:
    for stage in (Relevance(None, lambda ids: []), Blend(), Diversity()):
        stage.run(ranking)
    return ranking


def test_the_stages_run_in_the_order_of_the_list_and_name_themselves():
    assert [s.name for s in stages(None, lambda ids: [])] == [
        "topics", "relevance", "blend", "mmr"]


def test_below_the_threshold_is_dropped_with_its_reason_and_never_picked():
    ranking = _ranked(_pool([1.3, 0.13, 0.65], [0, 0, 0], [[1, 0], [0, 1], [0.7, 0.7]],
                            score_threshold=0.2))
    by_id = {c.id: c for c in ranking.candidates}
    assert by_id["m1"].reason.startswith("relevance 0.100 below score_threshold")
    assert [c.id for c in ranking.selected] == ["m0", "m2"]
    assert [c.rank for c in ranking.selected] == [1, 2]


def test_recency_decays_over_thirty_days_and_blends_by_its_weight():
    ranking = _ranked(_pool([0.65, 0.65], [0, 30], [[1, 0], [0, 1]], recency_weight=0.5,
                            importance_weight=0.0))
    fresh, old = ranking.candidates
    assert fresh.recency == 1.0 and abs(old.recency - np.exp(-1)) < 1e-9
    assert abs(fresh.score - (0.5 * 0.5 + 0.5 * 1.0)) < 1e-9
    assert ranking.selected[0] is fresh


def test_mmr_prefers_a_different_memory_to_a_near_copy():
    ranking = _ranked(_pool([1.3, 1.28, 1.0], [0, 0, 0],
                            [[1, 0], [0.999, 0.045], [0, 1]], mmr_lambda=0.5))
    assert [c.id for c in ranking.selected] == ["m0", "m2"]
    assert ranking.candidates[1].reason == "not picked by MMR within top_k"


class _Length:
    """A stage of a test's own: it scores each candidate by its content's length."""

    name = "length"

    def __init__(self, memories: dict[str, str]) -> None:
        self.memories = memories

    def run(self, ranking: Ranking) -> None:
        for c in ranking.candidates:
            c.staged[self.name] = float(len(self.memories.get(c.id, "")))


async def test_a_new_stage_is_run_timed_and_explained_with_no_other_change(harness):
    texts = ["The user's cat is called Miso", "The user drinks flat whites",
             "The user's cat sleeps on the radiator all winter"]
    ids = [await harness.write(t) for t in texts]
    harness.engine.reads.searcher.stages.insert(-1, _Length(dict(zip(ids, texts,
                                                                     strict=True))))
    out = await harness.call("memory_explain", query="what is my cat called", top_k=2)
    assert "length" in out["timings_ms"]
    shown = {c["id"]: c["scores"]["length"] for c in out["candidates"]}
    assert shown == {i: float(len(t)) for i, t in zip(ids, texts, strict=True)}
