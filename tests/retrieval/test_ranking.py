"""Ranking quality and behaviour on small written sets, through the real pipeline."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memoryd.scopes import Caller

FACTS = {
    "wife": "The user's wife is named Anne",
    "allergy": "The user is allergic to penicillin",
    "mother_city": "The user's mother lives in Lisbon",
    "mother_job": "The user's mother is a retired teacher",
    "car": "The user drives a blue Volvo estate",
    "editor": "The user prefers dark mode in every editor",
    "daughter": "The user's daughter is allergic to peanuts",
    "job": "The user works as a backend engineer at a payments company",
    "running": "The user runs a half marathon every spring",
    "cat": "The user's cat is called Miso",
    "coffee": "The user drinks oat milk flat whites, never sugar",
    "birthday": "The user's birthday is on the 14th of March",
}
WRITTEN = datetime(2026, 1, 1, 12, tzinfo=UTC)
QUESTIONS = [
    ("What is my spouse called?", "wife"),
    ("Which antibiotic am I allergic to?", "allergy"),
    ("Where does my mom live?", "mother_city"),
    ("What did my mother do for a living?", "mother_job"),
    ("What kind of car do I own?", "car"),
    ("What colour theme do I like in my IDE?", "editor"),
    ("What is my kid allergic to?", "daughter"),
    ("What is my job?", "job"),
    ("Which race do I run each year?", "running"),
    ("What's the name of my pet?", "cat"),
    ("How do I take my coffee?", "coffee"),
    ("When is my birthday?", "birthday"),
]


async def test_the_relevant_fact_comes_first(harness):
    # The text embedded holds the day it was written: one day, whatever the run's date.
    ids = {key: await harness.write(text, category="people", created_at=WRITTEN)
           for key, text in FACTS.items()}
    first = 0
    for question, key in QUESTIONS:
        result = await harness.call("memory_smart_search", query=question)
        top = [m["id"] for m in result["memories"]]
        first += bool(top) and top[0] == ids[key]
    assert first >= 11, f"{first}/12 relevant facts ranked first"
    hit = (await harness.call("memory_smart_search", query="Where does my mom live?"))
    assert hit["memories"][0]["scores"]["dense"] > 0.3
    assert set(hit["memories"][0]["scores"]) >= {"lexical", "dense", "relevance", "recency",
                                                 "importance", "score"}


async def test_scope_isolation(harness):
    claude, codex = Caller(agent="agent:claude"), Caller(agent="agent:codex")
    secret = await harness.write("The deploy key lives in the vault under ops/prod",
                                 caller=claude, scope="agent:claude")
    await harness.write("Deploys happen on Tuesdays", caller=codex)
    from memoryd.protocol.dispatch import Connection
    conn = Connection()
    conn.caller = codex
    result = await harness.call("memory_smart_search", conn=conn,
                                query="where is the deploy key", top_k=10)
    assert secret not in [m["id"] for m in result["memories"]]
    explained = await harness.call("memory_explain", conn=conn,
                                   query="where is the deploy key")
    assert secret not in [c["id"] for c in explained["candidates"]]
    own = Connection()
    own.caller = claude
    result = await harness.call("memory_smart_search", conn=own, query="deploy key")
    assert result["memories"][0]["id"] == secret


async def test_mmr_keeps_near_duplicates_from_crowding_the_top(harness):
    dups = [await harness.write(f"The user loves hiking in the mountains{'!' * n} (note {n})")
            for n in range(4)]
    other = await harness.write("The user goes hiking on mountain trails in the Dolomites")
    result = await harness.call("memory_smart_search", query="hiking in the mountains",
                                top_k=2)
    top = [m["id"] for m in result["memories"]]
    assert top[0] in dups and top[1] == other, "one duplicate, then something new"
    plain = await harness.call("memory_smart_search", query="hiking in the mountains",
                               top_k=2, mmr_lambda=1.0)
    assert all(i in dups for i in [m["id"] for m in plain["memories"]]), \
        "without MMR the duplicates crowd the top"


def test_mmr_function_trades_relevance_for_novelty():
    import numpy as np

    from memoryd.retrieval.scoring import mmr
    v = np.array([[1, 0], [0.999, 0.045], [0.6, 0.8]], dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    rel = np.array([0.9, 0.88, 0.75], dtype=np.float32)
    assert mmr(rel, v, 2, 0.7) == [0, 2]
    assert mmr(rel, v, 2, 1.0) == [0, 1]
    assert mmr(rel, v, 3, 0.7) == [0, 2, 1]
    assert mmr(rel[:0], v[:0], 3, 0.7) == []


async def test_recency_breaks_ties_toward_the_newer_fact(harness):
    old = await harness.write("The user's favourite colour is green",
                              created_at=datetime.now(UTC) - timedelta(days=90))
    new = await harness.write("The user's favourite colour is  green ",
                              scope="user:me", created_at=datetime.now(UTC))
    result = await harness.call("memory_smart_search", query="favourite colour",
                                scope=None, top_k=2)
    ids = [m["id"] for m in result["memories"]]
    assert old in ids  # global is visible; user:me is not without scope
    both = await harness.call("memory_explain", query="favourite colour")
    assert both
    mine = await harness.call("memory_smart_search", query="favourite colour", scope="user:me")
    assert mine["memories"][0]["id"] == new
    a = await harness.write("Team standup is at 9:30", category="habits",
                            created_at=datetime.now(UTC) - timedelta(days=60))
    b = await harness.write("Team standup is at 9:30.", category="habits",
                            created_at=datetime.now(UTC) - timedelta(days=1))
    result = await harness.call("memory_smart_search", query="when is standup", top_k=2)
    assert [m["id"] for m in result["memories"]][:2] == [b, a]
    scores = result["memories"]
    assert scores[0]["scores"]["recency"] > scores[1]["scores"]["recency"]


async def test_explain_shows_every_candidate_and_why(harness):
    for text in FACTS.values():
        await harness.write(text)
    out = await harness.call("memory_explain", query="Where does my mom live?", top_k=3)
    assert out["mode"] == "exact" and out["searched"] == len(FACTS)
    kept = [c for c in out["candidates"] if c["kept"]]
    assert sorted(c["rank"] for c in kept) == [1, 2, 3]
    dropped = [c for c in out["candidates"] if not c["kept"]]
    assert dropped and all(c["reason"] for c in dropped)
    assert {"embed", "lexical", "fusion"} <= set(out["timings_ms"])
    high = await harness.call("memory_explain", query="Where does my mom live?",
                              score_threshold=0.99)
    assert all("below score_threshold" in c["reason"] for c in high["candidates"])


async def test_filters_apply(harness):
    await harness.write("Postgres vacuum settings for the big table", category="knowledge",
                        tags=["db"])
    b = await harness.write("Postgres replica lag alert fires at 30s", category="project",
                            tags=["db", "ops"])
    result = await harness.call("memory_smart_search", query="postgres", category="project")
    assert [m["id"] for m in result["memories"]] == [b]
    result = await harness.call("memory_smart_search", query="postgres", tags=["ops"])
    assert [m["id"] for m in result["memories"]] == [b]


async def test_recall_block_procedural_first_within_budget(harness):
    await harness.write("Communication style: direct, technical, no preamble",
                        type="procedural", category="preferences")
    await harness.write("The user is a backend engineer (Python, PostgreSQL)",
                        category="people")
    await harness.write("Discussed the MySQL to PostgreSQL migration", type="episodic",
                        created_at=datetime(2026, 1, 20, tzinfo=UTC))
    out = await harness.call("memory_recall", query="how should I answer about the database "
                             "migration for this engineer", token_budget=2000)
    lines = out["text"].splitlines()
    assert lines[0] == "<memory>" and lines[-1] == "</memory>"
    assert lines[1].startswith("[PROCEDURAL] Communication style")
    assert "[EPISODIC] 2026-01-20: Discussed the MySQL" in out["text"]
    assert out["total_tokens"] <= 2000 and 0 < out["budget_used"] < 1
    small = await harness.call("memory_recall", query="database migration", token_budget=30)
    assert small["total_tokens"] <= 30
    assert len(small["memories"]) < len(out["memories"])
    count = harness.engine.embedder.count_tokens
    assert small["total_tokens"] == sum(count(x) for x in small["text"].splitlines()) or \
        small["text"] == ""


@pytest.mark.parametrize("bad", [{"query": ""}, {"query": "x", "top_k": 0},
                                 {"query": "x", "recency_weight": 0.8,
                                  "importance_weight": 0.5},
                                 {"query": "x", "mmr_lambda": 2}])
async def test_bad_params_are_refused(harness, bad):
    from memoryd.errors import InvalidParams
    with pytest.raises(InvalidParams):
        await harness.call("memory_smart_search", **bad)


async def test_recall_token_budget_from_the_config_is_the_default(make_harness):
    """recall.token_budget is what a recall without `token_budget` gets; a call's own
    budget still wins."""
    h = await make_harness({"recall": {"token_budget": 50}})
    for i in range(8):
        await h.write(f"Database note {i}: the PostgreSQL migration moves table {i} with "
                      "its indexes and its foreign keys", category="knowledge")
    small = await h.call("memory_recall", query="database migration")
    assert 0 < small["total_tokens"] <= 50 and small["budget_used"] <= 1
    wide = await h.call("memory_recall", query="database migration", token_budget=2000)
    assert wide["total_tokens"] > 50 and len(wide["memories"]) > len(small["memories"])
