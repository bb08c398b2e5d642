"""Entities in ranking: a question that names someone ranks what that person said
and what is said about them above what only speaks to them; a second hop reaches a
memory that shares a rarer entity with the best of those; the rows' entities follow
every change of the corpus (put, remove, compaction, snapshot)."""

from __future__ import annotations

import numpy as np

from memoryd.retrieval.columns import RowMeta
from memoryd.retrieval.entity_rows import EntityRows
from memoryd.retrieval.stages.entities import HOP_WEIGHT, WEIGHT

TURNS = [  # a conversation: the questions below are about Melanie
    "Caroline: Wow, Melanie! That's great news about the new job.",
    "Melanie: My kids are crazy about dinosaurs since the museum trip.",
    "Caroline: Thanks, Melanie! My kids love painting more than anything.",
    "Melanie: We took the kids camping by the lake last weekend.",
    "Caroline: Hey Melanie, my kids want a dog now.",
]


async def test_a_named_persons_own_words_rank_above_the_turns_that_speak_to_them(harness):
    ids = [await harness.write(t, session="s1", role="user") for t in TURNS]
    for question in ("What do Melanie's kids like?", "What are Melanie's children into?",
                     "Which things does Melanie's family enjoy?"):
        out = await harness.call("memory_smart_search", query=question, top_k=2)
        assert {m["id"] for m in out["memories"]} == {ids[1], ids[3]}, question
    explained = await harness.call("memory_explain", query="What do Melanie's kids like?")
    assert explained["entities"] == ["melanie"]
    by_id = {c["id"]: c for c in explained["candidates"]}
    assert by_id[ids[1]]["entities"] == ["melanie"]
    assert by_id[ids[1]]["scores"]["entities"] == WEIGHT
    assert by_id[ids[0]]["entities"] == [] and "entities" not in by_id[ids[0]]["scores"]


async def test_a_second_hop_follows_a_rarer_entity_beside_the_best_match(harness):
    await harness.write("On her holiday, Ann went to Porto with her sister Maria.")
    hop = await harness.write("The azulejos in Porto are blue and white tiles.")
    for n in range(6):  # unrelated memories, so that neither name is everywhere
        await harness.write(f"Note {n}: the build of service {n} passed on the CI runner.")
    out = await harness.call("memory_explain", query="What did Ann see on her holiday?")
    (reached,) = [c for c in out["candidates"] if c["id"] == hop]
    assert reached["entities"] == [] and "porto" in reached["via_entities"]
    assert reached["scores"]["entities"] == HOP_WEIGHT


async def test_a_one_word_name_stands_for_the_longer_name_it_begins(harness):
    smith = await harness.write("I met Ann Smith at the Bank of America yesterday.")
    await harness.write("Bob Jones works at the bakery on the corner.")
    out = await harness.call("memory_explain", query="Where did I meet Ann?")
    assert out["entities"] == ["ann", "ann smith"]
    (found,) = [c for c in out["candidates"] if c["id"] == smith]
    assert found["entities"] == ["ann smith"]
    assert found["scores"]["entities"] == WEIGHT  # the whole boost: Ann is one entity


def _meta(i: int, entities: tuple[str, ...] = (), weak: tuple[str, ...] = ()) -> RowMeta:
    return RowMeta(id=f"m{i}", scope="global", session=None, is_turn=False,
                   tags=frozenset(), compressed=False, expires_at=None, superseded=False,
                   entities=entities, weak=weak)


def test_a_weak_mention_counts_only_for_a_name_the_store_holds():
    rows = EntityRows()
    metas = [_meta(0, ("ann smith",)), _meta(1, weak=("ann",)), _meta(2, weak=("painting",)),
             _meta(3, ("rex",), ("ann",))]
    rows.rebuild(list(metas))
    everything = lambda r: np.ones(len(r), dtype=bool)  # noqa: E731
    assert rows.in_query("What does Ann like?") == [("ann", "ann smith")]
    assert rows.rows(["ann", "ann smith"], everything).tolist() == [0, 1, 3]
    assert rows.in_query("Is Painting fun?") == []  # never a name outright
    assert rows.rows(["painting"], everything).tolist() == []
    assert rows.rows(["rex"], lambda r: r != 3).tolist() == []  # the mask's say


async def test_entities_survive_compaction_and_a_snapshot(make_harness, tmp_path):
    h = await make_harness()
    keep = await h.write("My friend Priya moved to Lisbon with her cat Miso.")
    gone = await h.write("Tom visited Lisbon in May.")
    await h.call("memory_delete", id=gone)
    await h.engine.save_snapshot()
    h.engine.close()
    again = await make_harness(root=tmp_path)
    out = await again.call("memory_explain", query="Where does Priya live now?")
    assert out["entities"] == ["priya"]
    assert [c["id"] for c in out["candidates"] if c["entities"]] == [keep]
