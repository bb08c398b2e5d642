"""The ranking stages: each reads the pool of candidates and writes its scores, in the
order of the stage list; a stage added to the list is run, timed and shown by
memory_explain with no other change."""

from __future__ import annotations

import numpy as np
import pytest

from memoryd.retrieval import query as asked
from memoryd.retrieval.candidates import Candidate, Ranking, SearchRequest
from memoryd.retrieval.stages import stages
from memoryd.retrieval.stages.blend import Blend
from memoryd.retrieval.stages.current import Current
from memoryd.retrieval.stages.diversity import Diversity
from memoryd.retrieval.stages.relevance import Relevance
from memoryd.schema import Memory

NOW = 1_800_000_000.0
DAY = 86400.0


def _pool(combined: list[float], ages_days: list[float], vectors: list[list[float]],
          question: str = "q", **request: float) -> Ranking:
    candidates = [Candidate(id=f"m{i}", lexical=0, dense=0, dense_own=0, dense_context=0,
                            fused=c, neighbour_credit=0, session_boost=0, combined=c)
                  for i, c in enumerate(combined)]
    return Ranking(asked.read(SearchRequest(query=question, top_k=2, **request), (), NOW), NOW,
                   candidates,
                   np.array(vectors, dtype=np.float32),
                   np.array([NOW - a * DAY for a in ages_days]),
                   np.full(len(combined), 0.5, dtype=np.float32))


def _ranked(ranking: Ranking) -> Ranking:
    for stage in (Relevance(None, lambda ids: []), Blend(), Diversity()):
        stage.run(ranking)
    return ranking


def test_the_stages_run_in_the_order_of_the_list_and_name_themselves():
    assert [s.name for s in stages(None, lambda ids: [], 0.3)] == [
        "topics", "passages", "relevance", "blend", "entities", "when", "current", "mmr"]


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
    # stronger than the one picked in its place: explain says which it was like
    assert ranking.candidates[1].reason == \
        "pushed down by MMR: like m0 (cosine 1.00), picked before it"


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


def _facts(*said: tuple[str, float, float], question: str = "q"
           ) -> tuple[Ranking, dict[str, Memory]]:
    """A pool of facts: (text, score, age in days), for `question`."""
    ranking = _pool([1.0] * len(said), [age for _, _, age in said],
                    [[1, 0]] * len(said), question)
    memories = {}
    for c, (text, score, _) in zip(ranking.candidates, said, strict=True):
        c.score = score
        memories[c.id] = Memory(id=c.id, content=text, kind="fact")
    return ranking, memories


def test_the_newer_fact_on_a_frame_ranks_above_the_older():
    """Reconciliation kept both (it could not tell): the current value comes first."""
    ranking, memories = _facts(("The user lives in Paris.", 0.9, 400),
                               ("The user moved to Berlin last month.", 0.7, 20),
                               ("The user likes jazz.", 0.8, 500))
    Current(lambda ids: [memories[i] for i in ids]).run(ranking)
    paris, berlin, jazz = ranking.candidates
    assert paris.score < berlin.score and "current" in paris.scores()
    assert jazz.score == 0.8, "another frame is left alone"


@pytest.mark.parametrize(("older", "newer"), [
    ("The user lives in Paris.", "Since June the user has been living in Rome."),
    ("The user works at Google.", "The user got a job at Oracle."),
    ("The user is 29.", "The user just turned 30."),
    ("The user has two dogs.", "The user and family now have three dogs."),
    ("用户在腾讯工作。", "用户现在在阿里巴巴工作。"),
])
def test_the_newer_fact_comes_first_however_it_is_worded(older, newer):
    ranking, memories = _facts((older, 0.9, 400), (newer, 0.7, 20))
    Current(lambda ids: [memories[i] for i in ids]).run(ranking)
    old, new = ranking.candidates
    assert old.score < new.score, (older, newer)


def test_a_question_about_the_past_keeps_the_old_fact_where_it_ranked():
    for query in ("where did the user live before?", "where was the user in 2019",
                  "用户以前住在哪里"):
        ranking, memories = _facts(("The user lives in Paris.", 0.9, 400),
                                   ("The user lives in Berlin.", 0.7, 20), question=query)
        Current(lambda ids, known=memories: [known[i] for i in ids]).run(ranking)
        assert ranking.candidates[0].score == 0.9, query


def _said(question: str, *said: tuple[str, float, float, list[float]]
          ) -> tuple[Ranking, dict[str, Memory]]:
    """The asker's own turns: (text, score, age in days, vector), for `question`."""
    ranking = _pool([1.0] * len(said), [age for _, _, age, _ in said],
                    [v for *_, v in said], question)
    memories = {}
    for c, (text, score, _, _) in zip(ranking.candidates, said, strict=True):
        c.score = score
        memories[c.id] = Memory(id=c.id, content=text, kind="turn", role="user")
    return ranking, memories


# Two turns about one matter (cosine 0.8) and one about another (cosine 0).
_CIVIC = ("My car is a Honda Civic.", 0.6, 90, [1.0, 0.0])
_FOCUS = ("Sold the Civic last week, it's a Ford Focus for me now.", 0.35, 5, [0.8, 0.6])
_TEA = ("I drink green tea every morning.", 0.5, 2, [0.0, 1.0])


def test_what_the_asker_said_later_answers_a_question_about_now():
    """No rule recognises the change ("sold ... now"): of two things the asker said
    about one matter, the later answers a question for one value that holds now."""
    ranking, memories = _said("What car do I drive?", _CIVIC, _FOCUS, _TEA)
    Current(lambda ids: [memories[i] for i in ids]).run(ranking)
    civic, focus, tea = ranking.candidates
    assert focus.score > civic.score + 5e-5 and focus.scores()["current"] > 0.2
    assert civic.score == 0.6 and tea.score == 0.5, "the older stays; another matter too"


@pytest.mark.parametrize("question", [
    "What cars have I owned?",           # several
    "Which car did I drive in 2019?",    # the past
    "I drive a Honda Civic, right?",     # to confirm what it says
    "What car did you suggest to me?",   # another's doing
    "What car does Anna drive?",         # not of the asker
])
def test_a_later_statement_is_one_more_answer_to_other_questions(question):
    ranking, memories = _said(question, _CIVIC, _FOCUS)
    Current(lambda ids: [memories[i] for i in ids]).run(ranking)
    assert [c.score for c in ranking.candidates] == [0.6, 0.35]


def test_said_later_needs_one_matter_and_near_relevance():
    far = ("Sold the Civic last week, it's a Ford Focus for me now.", 0.35, 5, [0.0, 1.0])
    weak = ("Sold the Civic last week, it's a Ford Focus for me now.", 0.1, 5, [0.8, 0.6])
    for newer in (far, weak):
        ranking, memories = _said("What car do I drive?", _CIVIC, newer)
        Current(lambda ids, known=memories: [known[i] for i in ids]).run(ranking)
        assert ranking.candidates[1].score == newer[1]


def test_two_turns_of_one_session_are_one_telling():
    """A later turn of the same conversation goes on with it; it is not a change."""
    ranking, memories = _said("What car do I drive?", _CIVIC, _FOCUS)
    for memory in memories.values():
        memory.session = "s1"
    Current(lambda ids: [memories[i] for i in ids]).run(ranking)
    assert [c.score for c in ranking.candidates] == [0.6, 0.35]


async def test_big_news_of_a_move_replaces_the_old_city(harness):
    """Said the way people say it, the move is an update, and the answer is the new
    city; one more pet is one more fact."""
    for text in ("I live in Paris.", "Big news: I moved to Berlin last month.",
                 "I have a dog named Rex.", "Thanks! I also have a cat."):
        await harness.call("memory_add", text=text)
    where = await harness.call("memory_smart_search", query="where does the user live?")
    assert "Berlin" in where["memories"][0]["content"]
    assert not any("Paris" in m["content"] for m in where["memories"])
    pets = await harness.call("memory_smart_search", query="what pets does the user have")
    shown = " ".join(m["content"] for m in pets["memories"])
    assert "dog" in shown and "cat" in shown


class _Speaker:
    """A stage of a test's own that reads what each row's text says (its speaker, read
    when it was indexed) and what the question names: the two kinds of signal a stage
    reads with no change to gathering."""

    name = "speaker_named"

    def run(self, ranking: Ranking) -> None:
        assert [r.id for r in ranking.rows] == [c.id for c in ranking.candidates]
        named = {k for group in ranking.query.named for k in group}
        for c, row in zip(ranking.candidates, ranking.rows, strict=True):
            c.staged[self.name] = 1.0 if row.speaker in named else 0.0


async def test_a_stage_reads_each_rows_readings_and_the_questions(harness):
    said = {"Melanie: I paint landscapes on weekends.": 1.0,
            "Caroline: Melanie showed me her landscapes.": 0.0}
    ids = {await harness.write(t, session="s1", role="user"): v for t, v in said.items()}
    harness.engine.reads.searcher.stages.insert(-1, _Speaker())
    out = await harness.call("memory_explain", query="What does Melanie paint?")
    shown = {c["id"]: c["scores"]["speaker_named"] for c in out["candidates"]}
    assert shown == ids
