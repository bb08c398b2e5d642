"""memory_remember, memory_add, memory_history and recall's [RECENT], through the
dispatcher over a real engine (fake model): files on disk, what search and recall
return, the background work, a restart, eviction and compression."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.jobs import compress
from memoryd.schema import utcnow
from memoryd.store import frontmatter
from tests.rig import Rig


def on_disk(root: Path, pattern: str) -> list[frontmatter.Memory]:
    return [frontmatter.parse(p.read_text(), p.stem).memory
            for p in sorted(root.glob(pattern))]


async def remember(rig: Rig, content: str, role: str = "user", session: str = "s1",
                   **more) -> dict:
    return await rig.result("memory_remember", session=session, role=role, content=content,
                            **more)


async def test_a_turn_is_durable_before_the_reply_and_settled_in_the_background(rig):
    got = await remember(rig, "My wife is named Anne and I hate mushrooms")
    assert got["stored"] is True and set(got) == {"id", "stored", "type", "importance"}
    (turn,) = on_disk(rig.root, "sessions/s1/turns/*.md")
    assert turn.id == got["id"] and turn.pending is True and turn.kind == "turn"
    assert (await rig.result("stats"))["backlog"] == 1
    assert await rig.engine.learning.drain() == 1
    assert (await rig.result("stats"))["backlog"] == 0
    (turn,) = on_disk(rig.root, "sessions/s1/turns/*.md")
    assert turn.pending is False and turn.type == "procedural" and turn.importance != 0.5
    facts = on_disk(rig.root, "categories/*/*.md")
    assert sorted(f.content for f in facts) == ["The user hates mushrooms.",
                                                "The user's wife is named Anne."]
    assert all(f.kind == "fact" and f.derived_from == [turn.id] for f in facts)
    assert all(f.created_at == turn.created_at and f.session == "s1" for f in facts)
    (summary,) = on_disk(rig.root, "sessions/s1/summary.md")
    assert summary.kind == "summary" and "Anne" in summary.content
    recalled = await rig.result("memory_recall", query="what should I cook for my wife?",
                                session="s1")
    assert "The user's wife is named Anne." in recalled["text"]
    assert "The user hates mushrooms." in recalled["text"]  # procedural: always first
    assert "[SUMMARY]" in recalled["text"]


async def test_assistant_turns_are_never_mined(rig):
    await remember(rig, "I think your wife Anne would love the mushroom risotto",
                   role="assistant")
    await rig.engine.learning.drain()
    assert on_disk(rig.root, "categories/*/*.md") == []


@pytest.mark.parametrize(("content", "reason"), [
    ("ok", "too_short"), ("Thanks, sounds good!", "stop_words"),
    ("Error: connection refused (ECONNREFUSED)", "infrastructure_noise")])
async def test_the_gate_skips_and_writes_nothing(rig, content, reason):
    got = await remember(rig, content)
    assert got == {"stored": False, "skipped": {"reason": reason}}
    assert list(rig.root.glob("sessions/**/*.md")) == []


async def test_a_near_duplicate_bumps_the_original_instead(rig):
    first = await remember(rig, "We are planning a trip to Lisbon in May")
    again = await remember(rig, "We are planning a trip to Lisbon in May!")
    assert again["stored"] is False and again["skipped"]["reason"] == "near_duplicate"
    assert again["skipped"]["duplicate_of"] == first["id"]
    assert rig.engine.access_counts.pending(first["id"]).count == 1
    assert len(list(rig.root.glob("sessions/s1/turns/*.md"))) == 1


async def test_a_turn_that_says_something_new_is_no_duplicate_however_close(tmp_path):
    """The model alone is no judge of a duplicate (the real MiniLM puts "on Tuesday" and
    "on Wednesday" at 0.99, unrelated Chinese sentences of one shape above 0.92): a turn
    with a content word the close one lacks is stored."""
    rig = Rig(tmp_path, {"conversation": {"duplicate_cosine": 0.5}})  # all are close
    await rig.start()
    try:
        first = await remember(rig, "Meeting with Ann and Bob in room 4 on Tuesday at 3")
        moved = await remember(rig, "Meeting with Ann and Bob in room 4 on Wednesday at 3")
        assert moved["stored"] is True, moved
        again = await remember(rig, "meeting with Ann and Bob, in room 4, on Tuesday at 3!")
        assert again["skipped"]["reason"] == "near_duplicate", again
        assert again["skipped"]["duplicate_of"] == first["id"]
        chinese = [await remember(rig, text) for text in ("今天我想和你聊聊关于旅游的事情。",
                                                          "今天我想和你聊聊关于工作的事情。")]
        assert all(got["stored"] for got in chinese), chinese
        assert len(list(rig.root.glob("sessions/s1/turns/*.md"))) == 4
    finally:
        rig.close()


async def test_recall_shows_the_session_tail_verbatim(rig):
    topics = ["gardening in spring", "cheap flights to Rome", "the new laptop battery",
              "a violin lesson on Friday", "tomato seedlings indoors", "the chess club",
              "tax forms due in April"]
    said = [(("user", "assistant")[n % 2], f"Let us talk about {t}") for n, t in
            enumerate(topics)]
    for role, text in said:
        assert (await remember(rig, text, role=role))["stored"]
    got = await rig.result("memory_recall", query="tomatoes", session="s1")
    recent = got["text"].split("[RECENT]\n", 1)[1].split("\n</memory>")[0].splitlines()
    assert recent == [f'{role}: "{text}"' for role, text in said[2:]]
    assert not {m["id"] for m in got["recent"]} & {m["id"] for m in got["memories"]}
    none = await rig.result("memory_recall", query="tomatoes", session="s1", tail=0)
    assert "[RECENT]" not in none["text"] and none["recent"] == []
    # the session's own turns are never ranked back to it: it has them
    assert not any(m["session"] == "s1" and m["kind"] == "turn" for m in none["memories"])
    assert not none["summary_included"]
    two = await rig.result("memory_recall", query="tomatoes", session="s1", tail=2)
    assert len(two["recent"]) == 2


async def test_the_backlog_and_the_ring_survive_a_restart(tmp_path):
    rig = Rig(tmp_path / "root")
    await rig.start()
    for text in ("I live in Boston with my sister", "My sister is a nurse at the hospital"):
        await remember(rig, text)
    rig.close()
    rig = Rig(tmp_path / "root")  # a kill before the background work ran
    await rig.start()
    assert (await rig.result("stats"))["backlog"] == 2
    got = await rig.result("memory_recall", query="sister", session="s1")
    assert len(got["recent"]) == 2  # the ring was rebuilt from the files
    assert await rig.engine.learning.drain() == 2
    assert (await rig.result("stats"))["backlog"] == 0
    assert len(on_disk(rig.root, "categories/*/*.md")) == 2
    rig.close()


async def test_reconciliation_updates_and_keeps_history(rig):
    first = await rig.result("memory_add", text="I live in Boston")
    assert first["path"] == "heuristic"
    [(event, boston)] = [(f["event"], f["id"]) for f in first["facts"]]
    assert event == "ADD"
    second = await rig.result("memory_add", text="I moved to Denver")
    (fact,) = second["facts"]
    assert fact["event"] == "UPDATE" and fact["replaces"] == boston and fact["reason"]
    (old,) = on_disk(rig.root, "trash/categories/*/*.md")
    assert old.id == boston and old.replaced_by == fact["id"] and old.superseded_at
    (new,) = on_disk(rig.root, "categories/*/*.md")
    assert new.replaces == [boston]
    search = await rig.result("memory_search", query="Boston")
    assert search["memories"] == []
    smart = await rig.result("memory_smart_search", query="where does the user live")
    assert [m["content"] for m in smart["memories"]] == ["The user moved to Denver."]
    history = await rig.result("memory_history", id=fact["id"])
    assert [(v["content"], v["event"], v["current"]) for v in history["versions"]] == [
        ("The user lives in Boston.", "ADD", False),
        ("The user moved to Denver.", "UPDATE", True)]
    assert (await rig.result("memory_history", id=boston)) == history | {"id": boston}


async def test_as_of_sees_the_facts_current_then(rig):
    await rig.result("memory_remember", session="s1", role="user",
                     content="I live in Boston", timestamp="2023-03-01T10:00:00Z")
    await rig.engine.learning.drain()
    await rig.result("memory_remember", session="s1", role="user",
                     content="I moved to Denver", timestamp="2024-06-01T10:00:00Z")
    await rig.engine.learning.drain()
    query = {"query": "where does the user live", "kind": "fact"}
    then = await rig.result("memory_smart_search", as_of="2023-12-31", **query)
    assert [m["content"] for m in then["memories"]] == ["The user lives in Boston."]
    now = await rig.result("memory_smart_search", **query)
    assert [m["content"] for m in now["memories"]] == ["The user moved to Denver."]
    before = await rig.result("memory_smart_search", as_of="2022-01-01", **query)
    assert before["memories"] == []
    recall = await rig.result("memory_recall", query="where did the user live",
                              as_of="2023-12-31", kind="fact")
    assert "Boston" in recall["text"] and "Denver" not in recall["text"]


@pytest.mark.parametrize(("first", "second", "events"), [
    ("I love pizza", "I hate pizza now", ["UPDATE"]),
    ("My favorite color is blue", "My favorite color is green", ["UPDATE"]),
    ("我住在北京", "我搬到上海了", ["UPDATE"]),
    ("I have a dog named Rex", "I also have a cat", ["ADD"]),
    ("I have a dog named Rex", "I have a dog named Rex.", ["NONE"]),
    # a switch that names only the new value: the engine's embedder compares the values
    # (the fake's bag of words: "whole milk" and "oat milk" share a word, 0.60)
    ("I drink whole milk", "I switched to oat milk", ["UPDATE"]),
    ("I use vim", "I switched to Linux", ["ADD"]),
])
async def test_the_deterministic_reconciliation_cases(rig, first, second, events):
    await rig.result("memory_add", text=first)
    got = await rig.result("memory_add", text=second)
    assert [f["event"] for f in got["facts"]] == events
    live = on_disk(rig.root, "categories/*/*.md")
    assert len(live) == (2 if events == ["ADD"] else 1)


async def test_eviction_keeps_a_session_under_its_cap(tmp_path):
    rig = Rig(tmp_path / "root", {"conversation": {"max_entries": 3, "facts": False}})
    await rig.start()
    words = ["apples", "bicycles", "cathedrals", "dolphins", "elevators"]
    for n, word in enumerate(words):
        got = await remember(rig, f"Entry {n} is about {word}", role="assistant",
                             timestamp=f"2024-01-0{n + 1}T00:00:00Z")
        assert got["stored"]
    await rig.engine.learning.drain()
    kept = on_disk(rig.root, "sessions/s1/turns/*.md")
    assert [t.content[:7] for t in kept] == ["Entry 2", "Entry 3", "Entry 4"]
    assert len(list(rig.root.glob("trash/sessions/s1/turns/*.md"))) == 2
    rig.close()


async def test_compression_folds_the_oldest_half_and_deletes_nothing(tmp_path):
    rig = Rig(tmp_path / "root", {"compression": {"threshold": 2},
                                  "conversation": {"facts": False}})
    await rig.start()
    plans = ["brokers first", "the schema registry", "consumer lag alerts", "topic retention"]
    for n, plan in enumerate(plans):
        got = await remember(rig, f"For the Kafka migration we discussed {plan}",
                             session=f"s{n}", timestamp=f"2024-02-0{n + 1}T00:00:00Z")
        assert got["stored"]
    await rig.engine.learning.drain()
    changes = await compress.run(rig.engine, utcnow(), dry_run=False)
    assert sorted(c.before["session"] for c in changes) == ["s0", "s1"]
    folded = [m for m in on_disk(rig.root, "categories/knowledge/*.md")
              if m.compression_source]
    assert sorted(m.source_session for m in folded) == ["s0", "s1"]
    turns = on_disk(rig.root, "sessions/*/turns/*.md")
    assert len(turns) == 4 and sorted(t.session for t in turns if t.compressed) == ["s0", "s1"]
    hidden = await rig.result("memory_smart_search", query="Kafka migration", top_k=10,
                              kind="turn")
    assert sorted(m["session"] for m in hidden["memories"]) == ["s2", "s3"]
    shown = await rig.result("memory_smart_search", query="Kafka migration", top_k=10,
                             kind="turn", include_compressed=True)
    assert len(shown["memories"]) == 4
    rig.close()


async def test_a_summary_that_states_a_replaced_fact_is_written_again(rig):
    """Paris was learned in one session, the move to Berlin in another: the first
    session's summary no longer says the user lives in Paris (a dated quote of what
    the user said then may stay: it is what was said, not what is)."""
    await rig.result("memory_remember", session="first", role="user",
                     content="Hi! I live in Paris and I work at Acme.")
    await rig.engine.learning.drain()
    assert "The user lives in Paris." in (await rig.engine.reads.session_summary("first")
                                          or "")
    await rig.result("memory_remember", session="second", role="user",
                     content="Big news: I moved to Berlin last month.")
    await rig.engine.learning.drain()
    first = await rig.engine.reads.session_summary("first") or ""
    assert "The user lives in Paris." not in first and "works at Acme" in first, first
    assert "Berlin" in (await rig.engine.reads.session_summary("second") or "")


async def test_a_remembered_turns_entities_are_indexed_when_it_is_settled(rig):
    """The reply does not wait for entity extraction: a pending turn has none yet;
    the background work that settles it indexes them, in the catalog and for ranking."""
    got = await remember(rig, "Yesterday I went sailing with Priya near Kiel.")
    listed = await rig.result("memory_entities")
    assert listed["entities"] == []
    assert await rig.engine.learning.drain() == 1
    listed = await rig.result("memory_entities")
    assert {e["name"] for e in listed["entities"]} >= {"Priya", "Kiel"}
    explained = await rig.result("memory_explain", query="Where did Priya go sailing?")
    assert explained["entities"] == ["priya"]
    (turn,) = [c for c in explained["candidates"] if c["id"] == got["id"]]
    assert turn["entities"] == ["priya"]


async def test_a_turn_is_read_by_the_fact_rules_once_and_its_secret_cut_once(
        rig, monkeypatch):
    """The learning worker reads a user's turn with the fact rules once: what routes
    its type is what Facts learns. The reply's `redacted` is what the build cut."""
    from memoryd.lang import facts

    read: list[str] = []
    real = facts.extract

    def counted(text: str, *args, **kwargs) -> list[str]:
        read.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(facts, "extract", counted)
    secret = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
    got = await remember(rig, f"My sister lives in Porto and her token is {secret}.")
    assert got["redacted"] == 1
    await rig.engine.learning.drain()
    turn_reads = [t for t in read if t.startswith("My sister lives in Porto")]
    assert len(turn_reads) == 1, read
    learned = [f.content for f in on_disk(rig.root, "categories/*/*.md")]
    assert any(f.startswith("The user's sister lives in Porto") for f in learned), learned
    assert not any(secret in p.read_text() for p in rig.root.rglob("*.md"))


async def test_chit_chat_said_like_a_fact_is_not_learned_with_the_model(tmp_path):
    """With the shipped model: a feeling said in passing is kept as the turn, not
    learned as a fact; a fact said in the same turn is (lang/prototypes.py)."""
    from memoryd.models.embedder import OnnxEmbedder
    rig = Rig(tmp_path / "root", embedder=OnnxEmbedder())
    await rig.start()
    try:
        await remember(rig, "I'm kind of anxious about the whole thing. "
                            "I teach chemistry at a high school in Ohio.")
        await rig.engine.learning.drain()
        facts = on_disk(rig.root, "categories/*/*.md")
        assert [f.content for f in facts] == [
            "The user teaches chemistry at a high school in Ohio."]
        (turn,) = on_disk(rig.root, "sessions/s1/turns/*.md")
        assert "anxious" in turn.content
    finally:
        rig.close()
