"""Entities in ranking: a question that names someone ranks what that person said
and what is said about them above what only speaks to them, and what they tell of
themselves first; a second hop reaches a memory that shares a rarer entity with the
best of those; the rows' entities and speakers follow every change of the corpus
(put, remove, compaction, snapshot)."""

from __future__ import annotations

import numpy as np

from memoryd.engine import NewMemory
from memoryd.retrieval.columns import RowMeta
from memoryd.retrieval.entity_rows import EntityRows
from memoryd.retrieval.stages.entities import ASKER_WEIGHT, HOP_WEIGHT, OWN_WEIGHT, WEIGHT
from memoryd.scopes import Caller

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
    assert by_id[ids[1]]["entities"] == ["melanie"] and by_id[ids[1]]["own_words"]
    assert by_id[ids[1]]["scores"]["entities"] == WEIGHT + OWN_WEIGHT
    assert by_id[ids[0]]["entities"] == [] and "entities" not in by_id[ids[0]]["scores"]
    assert not by_id[ids[0]]["own_words"]


async def test_what_a_named_person_tells_of_themselves_counts_once_more(harness):
    """Melanie's turns that say something of her, over those that only speak (a
    thanks, a question), and over Caroline's statements that only mention her."""
    said = [
        "Melanie: I started pottery classes on Tuesdays and I love it.",
        "Melanie: Thanks, Caroline! That's so kind.",
        "Melanie: Have you ever tried pottery?",
        "Caroline: I went to Melanie's pottery show and I bought a bowl.",
        "Melanie: Last month we adopted a puppy called Biscuit.",
    ]
    ids = [await harness.write(t, session=f"s{i}", role="user") for i, t in enumerate(said)]
    out = await harness.call("memory_explain", query="What hobbies does Melanie have?")
    by_id = {c["id"]: c for c in out["candidates"]}
    assert [i for i in ids if by_id[i]["own_words"]] == [ids[0], ids[4]]
    assert by_id[ids[0]]["scores"]["entities"] == WEIGHT + OWN_WEIGHT
    assert by_id[ids[1]]["scores"]["entities"] == WEIGHT
    assert by_id[ids[3]]["scores"]["entities"] == WEIGHT  # names her; not her words
    # No one named: no one's own words count.
    out = await harness.call("memory_explain", query="Who makes pottery?")
    assert not any(c["own_words"] for c in out["candidates"])


async def test_a_question_about_a_speaker_is_embedded_in_their_voice(harness):
    for t in TURNS:
        await harness.write(t, session="s1", role="user", scope="project:chat")
    await harness.write("Note: Melanie from accounts wants the report by Friday.")
    asked = {
        "What has Melanie done with her kids?": "What have I done with her kids?",
        "What are Melanie's kids into?": "What are my kids into?",
        "does melanie like camping?": "does melanie like camping?",  # not a name here
        "What do Melanie and Caroline both like?": "What do I and I both like?",
    }
    for question, embedded in asked.items():
        out = await harness.call("memory_explain", query=question, scope="project:chat")
        assert out["embedded_query"] == embedded, question
    # A scope where no turn is Melanie's: her name stays ("Note:" opens no turn).
    out = await harness.call("memory_explain", query="What has Melanie done?",
                             scope="global")
    assert out["embedded_query"] == "What has Melanie done?"


async def test_a_second_hop_follows_a_rarer_entity_beside_the_best_match(harness):
    await harness.write("On her holiday, Ann went to Porto with her sister Maria.")
    hop = await harness.write("The azulejos in Porto are blue and white tiles.")
    for n in range(6):  # unrelated memories, so that neither name is everywhere
        await harness.write(f"Note {n}: the build of service {n} passed on the CI runner.")
    out = await harness.call("memory_explain", query="What did Ann see on her holiday?")
    (reached,) = [c for c in out["candidates"] if c["id"] == hop]
    assert reached["entities"] == [] and "porto" in reached["via_entities"]
    assert reached["scores"]["entities"] == HOP_WEIGHT


async def test_whether_an_entity_is_everywhere_is_counted_in_the_scope_searched(harness):
    """An entity a scope names in most of its rows is not followed, however much other
    scopes hold: a scope's ranking depends on what it holds, never on the rest."""
    await harness.write("On her holiday, Ann went to Porto with her sister Maria.",
                        scope="user:a")
    for n in range(30):
        await harness.write(f"The tram in Porto runs every {n + 2} minutes on line {n}.",
                            scope="user:a")
    asked = {"query": "What did Ann see on her holiday?", "scope": "user:a"}
    before = await harness.call("memory_explain", **asked)
    assert not any("porto" in c["via_entities"] for c in before["candidates"])
    await harness.engine.writes.write_many(
        [NewMemory(content=f"Build {n} of service {n} passed on the CI runner.",
                   scope="user:b") for n in range(400)], Caller())
    after = await harness.call("memory_explain", **asked)
    assert ([(c["id"], c["rank"], c["scores"], c["via_entities"]) for c in after["candidates"]]
            == [(c["id"], c["rank"], c["scores"], c["via_entities"])
                for c in before["candidates"]])


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
    assert rows.in_query("What does Ann like?", everything) == [("ann", "ann smith")]
    assert rows.rows(["ann", "ann smith"], everything).tolist() == [0, 1, 3]
    assert rows.in_query("Is Painting fun?", everything) == []  # never a name outright
    # Where the only row naming Ann Smith is not searched (another scope's), Ann is no
    # name among the rows searched, and her weak mentions are no one's.
    elsewhere = lambda r: r != 0  # noqa: E731
    assert rows.in_query("What does Ann like?", elsewhere) == []
    assert rows.rows(["ann"], elsewhere).tolist() == []
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


async def test_speakers_survive_compaction_and_a_snapshot(make_harness, tmp_path):
    h = await make_harness()
    told = await h.write("Priya: I moved to Lisbon with my cat Miso.", session="s1",
                         role="user", scope="project:chat")
    gone = await h.write("Tom: I visited Lisbon in May.", session="s1", role="user",
                         scope="project:chat")
    await h.call("memory_delete", id=gone)
    await h.engine.save_snapshot()
    h.engine.close()
    again = await make_harness(root=tmp_path)
    out = await again.call("memory_explain", query="Where does Priya live now?",
                           scope="project:chat")
    assert out["embedded_query"] == "Where do I live now?"
    assert [c["id"] for c in out["candidates"] if c["own_words"]] == [told]


async def test_a_question_about_the_asker_ranks_their_own_words_first(harness):
    """"I", "my": the one asking is the conversation's user, and what they said (or
    the facts learned from it) answers; a question about what was said to them
    ("you") leaves the assistant's words as they rank."""
    said = [("user", "My favourite running shoes are the Nike Pegasus, I run in them daily."),
            ("assistant", "Running shoes from Nike, Asics and Brooks suit daily runs well.")]
    ids = [await harness.write(f"{role}: {text}", session="s1", role=role)
           for role, text in said]
    out = await harness.call("memory_explain", query="Which running shoes do I like?")
    by_id = {c["id"]: c for c in out["candidates"]}
    assert by_id[ids[0]]["scores"]["asker"] == ASKER_WEIGHT
    assert "asker" not in by_id[ids[1]]["scores"]
    out = await harness.call("memory_explain", query="Which running shoes did you suggest?")
    assert not any("asker" in c["scores"] for c in out["candidates"])
