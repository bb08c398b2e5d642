"""memory_add and memory_remember with an LLM: a scripted OpenAI-compatible server on
127.0.0.1 answers each TASK; every reconcile event, and every way the model can fail
(malformed JSON, unknown ids, only deletes, a timeout, HTTP 500), asserted on the
files and on what search returns."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memoryd.conversation import tasks
from memoryd.store import frontmatter
from tests.llm_server import ScriptedLlm, completion
from tests.rig import Rig

_SYSTEMS = {tasks.FACTS_SYSTEM: "facts", tasks.RECONCILE_SYSTEM: "reconcile",
            tasks.SUMMARY_SYSTEM: "summary", tasks.IMPORTANCE_SYSTEM: "importance",
            tasks.COMPRESS_SYSTEM: "compress"}


def task_of(body: dict[str, Any]) -> str:
    fmt = body.get("response_format")
    if fmt:
        return fmt["json_schema"]["name"]
    return _SYSTEMS.get(body["messages"][0]["content"], "?")


def user_json(body: dict[str, Any]) -> Any:
    return json.loads(body["messages"][1]["content"])


Script = dict[str, Callable[[dict[str, Any]], tuple[int, str]]]


def answers(script: Script) -> Callable[[dict[str, Any]], tuple[int, str]]:
    def answer(body: dict[str, Any]) -> tuple[int, str]:
        return script[task_of(body)](body)
    return answer


def ok(value: dict[str, Any]) -> Callable[[dict[str, Any]], tuple[int, str]]:
    return lambda body: completion(json.dumps(value))


@pytest.fixture
def scripted(tmp_path):
    made: list[tuple[ScriptedLlm, Rig]] = []

    async def make(script: Script, **llm: Any) -> tuple[ScriptedLlm, Rig]:
        server = ScriptedLlm(answers(script)).__enter__()
        rig = Rig(tmp_path / f"root{len(made)}", {"llm": {
            "url": server.url, "model": "tiny", "timeout": "2s", "retries": 0, **llm}})
        await rig.start()
        made.append((server, rig))
        return server, rig

    yield make
    for server, rig in made:
        rig.close()
        server.__exit__()


def facts_on_disk(root: Path, where: str = "categories/*/*.md") -> list[str]:
    return sorted(frontmatter.parse(p.read_text(), p.stem).memory.content
                  for p in root.glob(where))


async def seed(rig: Rig, server: ScriptedLlm, fact: str) -> str:
    """One known fact, added through the model's extraction (no reconcile: none known)."""
    server.answer = answers({"facts": ok({"facts": [fact]})})
    got = await rig.result("memory_add", text="(seed)")
    return got["facts"][0]["id"]


async def test_extraction_adds_without_a_reconcile_call_when_nothing_is_known(scripted):
    server, rig = await scripted({"facts": ok({"facts": [
        "The user's wife is named Anne", "The user hates mushrooms"]})})
    got = await rig.result("memory_add", text="My wife is Anne and I hate mushrooms")
    assert got["path"] == "llm"
    assert [(f["event"], f["text"]) for f in got["facts"]] == [
        ("ADD", "The user's wife is named Anne"), ("ADD", "The user hates mushrooms")]
    assert facts_on_disk(rig.root) == ["The user hates mushrooms",
                                       "The user's wife is named Anne"]
    (request,) = server.requests
    body = request["body"]
    assert body["temperature"] == 0 and body["response_format"]["json_schema"]["strict"]
    assert body["messages"][1]["content"] == "My wife is Anne and I hate mushrooms"


async def test_update_supersedes_the_known_fact(scripted):
    server, rig = await scripted({})
    boston = await seed(rig, server, "The user lives in Boston")
    server.answer = answers({
        "facts": ok({"facts": ["The user lives in Denver"]}),
        "reconcile": ok({"memory": [{"id": "0", "text": "The user lives in Denver",
                                     "event": "UPDATE"}]})})
    got = await rig.result("memory_add", text="I moved to Denver")
    (fact,) = got["facts"]
    assert (got["path"], fact["event"], fact["replaces"]) == ("llm", "UPDATE", boston)
    sent = user_json(server.requests[-1]["body"])
    assert sent == {"existing_memories": [{"id": "0", "text": "The user lives in Boston"}],
                    "new_facts": ["The user lives in Denver"]}
    assert facts_on_disk(rig.root) == ["The user lives in Denver"]
    assert facts_on_disk(rig.root, "trash/categories/*/*.md") == ["The user lives in Boston"]
    assert (await rig.result("memory_search", query="Boston"))["memories"] == []


async def test_delete_with_its_replacement(scripted):
    server, rig = await scripted({})
    pizza = await seed(rig, server, "The user loves pizza")
    server.answer = answers({
        "facts": ok({"facts": ["The user hates pizza"]}),
        "reconcile": ok({"memory": [{"id": "0", "text": "", "event": "DELETE"},
                                    {"id": "1", "text": "The user hates pizza",
                                     "event": "ADD"}]})})
    got = await rig.result("memory_add", text="I hate pizza now")
    assert sorted(f["event"] for f in got["facts"]) == ["ADD", "DELETE"]
    added = next(f["id"] for f in got["facts"] if f["event"] == "ADD")
    old = (await rig.result("memory_history", id=pizza))["versions"]
    assert old[0]["replaced_by"] == added and old[0]["current"] is False
    assert facts_on_disk(rig.root) == ["The user hates pizza"]


async def test_none_keeps_what_is_known(scripted):
    server, rig = await scripted({})
    await seed(rig, server, "The user has a dog named Rex")
    server.answer = answers({
        "facts": ok({"facts": ["The user has a dog called Rex"]}),
        "reconcile": ok({"memory": [{"id": "0", "text": "The user has a dog named Rex",
                                     "event": "NONE"}]})})
    got = await rig.result("memory_add", text="Rex is my dog")
    assert [f["event"] for f in got["facts"]] == ["NONE"]
    assert facts_on_disk(rig.root) == ["The user has a dog named Rex"]


@pytest.mark.parametrize("reconcile_answer", [
    lambda body: completion("{not json at all"),                  # malformed JSON
    lambda body: completion('{"memory": "everything is fine"}'),  # the wrong shape
    lambda body: (500, '{"error": "boom"}'),                      # HTTP 500
    lambda body: (time.sleep(1.5), completion('{"memory": []}'))[1],  # a timeout
])
async def test_a_failed_reconcile_falls_back_and_never_loses_the_new_fact(scripted,
                                                                          reconcile_answer):
    server, rig = await scripted({}, timeout="0.5s")
    await seed(rig, server, "The user lives in Boston")
    server.answer = answers({"facts": ok({"facts": ["The user moved to Denver"]}),
                             "reconcile": reconcile_answer})
    got = await rig.result("memory_add", text="I moved to Denver")
    (fact,) = got["facts"]
    assert got["path"] == "heuristic" and "llm reconcile failed" in fact["reason"]
    assert fact["event"] == "UPDATE"  # the deterministic decider took over
    assert facts_on_disk(rig.root) == ["The user moved to Denver"]


async def test_unknown_ids_and_only_deletes(scripted):
    server, rig = await scripted({})
    await seed(rig, server, "The user lives in Boston")
    server.answer = answers({
        "facts": ok({"facts": ["The user works at Acme"]}),
        "reconcile": ok({"memory": [{"id": "42", "text": "The user works at Acme",
                                     "event": "UPDATE"}]})})
    got = await rig.result("memory_add", text="I work at Acme")
    assert [f["event"] for f in got["facts"]] == ["ADD"] and "unknown id" in got["facts"][0][
        "reason"]
    server.answer = answers({
        "facts": ok({"facts": ["The user is vegetarian"]}),
        "reconcile": ok({"memory": [{"id": "0", "text": "", "event": "DELETE"},
                                    {"id": "1", "text": "", "event": "DELETE"}]})})
    got = await rig.result("memory_add", text="I'm vegetarian")
    assert sorted(f["event"] for f in got["facts"]) == ["ADD", "DELETE", "DELETE"]
    assert "The user is vegetarian" in facts_on_disk(rig.root)


async def test_failed_extraction_uses_the_rules(scripted):
    _server, rig = await scripted({"facts": lambda body: (500, "{}")})
    got = await rig.result("memory_add", text="I live in Oslo")
    assert got["path"] == "heuristic"
    assert got["facts"][0]["text"] == "The user lives in Oslo."
    assert "llm facts failed: HTTP 500" in got["facts"][0]["reason"]
    assert rig.engine.llm.failures == 1


async def test_without_structured_output_the_answer_is_found_in_prose(scripted):
    server, rig = await scripted({"facts": lambda body: completion(
        'Sure! ```json\n{"facts": ["The user plays the cello"]}\n```')},
        structured_output=False)
    got = await rig.result("memory_add", text="I play the cello")
    assert got["path"] == "llm" and got["facts"][0]["text"] == "The user plays the cello"
    assert "response_format" not in server.requests[0]["body"]


async def test_a_remembered_turn_learns_through_the_model(scripted):
    server, rig = await scripted({
        "importance": ok({"importance": 0.9}),
        "facts": ok({"facts": ["The user's wife is named Anne", "The user hates mushrooms"]}),
        "summary": ok({"summary": "Anne is the user's wife; no mushrooms."})})
    got = await rig.result("memory_remember", session="s1", role="user",
                           content="My wife is named Anne and I hate mushrooms")
    assert got["stored"] and got["importance"] == 0.5  # refined off the reply's path
    assert await rig.engine.learning.drain() == 1
    turn = await rig.result("memory_read", id=got["id"])
    assert turn["importance"] == 0.9 and turn["pending"] is False
    summary = frontmatter.parse((rig.root / "sessions/s1/summary.md").read_text(), "x")
    assert summary.memory.content == "Anne is the user's wife; no mushrooms."
    summary_request = next(r["body"] for r in server.requests if task_of(r["body"]) ==
                           "summary")
    assert user_json(summary_request)["new_facts"] == ["The user's wife is named Anne",
                                                       "The user hates mushrooms"]
    recalled = await rig.result("memory_recall", session="s1",
                                query="what should I cook for my wife tonight?")
    assert "Anne" in recalled["text"] and "mushrooms" in recalled["text"]


async def test_a_reconcile_answer_is_bounded_and_changes_a_fact_once(scripted):
    server, rig = await scripted({})
    paris = await seed(rig, server, "The user lives in Paris")
    flood = [{"id": "", "text": f"The user owns boat number {n}", "event": "ADD"}
             for n in range(2000)]
    server.answer = answers({
        "facts": ok({"facts": ["The user lives in Berlin"]}),
        "reconcile": ok({"memory": [
            {"id": "0", "text": "The user lives in Berlin", "event": "UPDATE"},
            {"id": "0", "text": "The user lives in Berlin now", "event": "UPDATE"},
            *flood]})})
    got = await rig.result("memory_add", text="Big news: we moved to Berlin")
    assert [f["event"] for f in got["facts"]] == ["UPDATE", "ADD"]
    assert len(facts_on_disk(rig.root)) == 2  # not 2,002
    current = [f for f in got["facts"] if f.get("replaces") == paris]
    assert len(current) == 1  # one current fact replaces Paris, and Paris names it
    old = (await rig.result("memory_history", id=paris))["versions"]
    assert old[0]["replaced_by"] == current[0]["id"]
