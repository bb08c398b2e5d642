"""dream's classification by an LLM (a scripted OpenAI-compatible server on 127.0.0.1),
and its fallback to the heuristics whenever the model gives no usable answer."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from memoryd.jobs import dream
from memoryd.scopes import Caller
from tests.llm_server import ScriptedLlm, completion, numbered

NOW = datetime.now(UTC)


def _classifier(choices: dict[str, str], wrap: str = "{}") -> object:
    """Answers each numbered memory by a word it contains; skips the rest."""
    def answer(body: dict) -> tuple[int, str]:
        prompt = body["messages"][-1]["content"]
        picked = {n: cat for n, text in numbered(prompt).items()
                  for word, cat in choices.items() if word in text}
        return completion(wrap.format(json.dumps(picked)))
    return answer


async def test_the_llm_classifies_and_the_heuristics_cover_what_it_leaves(
        make_harness, monkeypatch):
    monkeypatch.setenv("MEMORYD_TEST_KEY", "sk-test")
    answer = _classifier({"bus": "habits", "Kubernetes": "skills", "weather": "inbox",
                          "dark mode": "colours"},  # not a category: heuristics decide
                         wrap="Sure! Here you go:\n```json\n{}\n```")
    with ScriptedLlm(answer) as llm:
        h = await make_harness({"llm": {"url": llm.url, "model": "tiny",
                                        "api_key_env": "MEMORYD_TEST_KEY"}})
        bus = await h.write("I take the bus to work")  # no cue word: only the LLM knows
        k8s = await h.write("She runs Kubernetes clusters in her sleep")
        weather = await h.write("The weather was odd today")
        dark = await h.write("The user prefers dark mode")
        chinese = await h.write("我们决定采用 PostgreSQL")  # the model skips it
        changes = await dream.run(h.engine, NOW, dry_run=False, level=1)
    got = {c.id: (c.after["category"], c.after["by"]) for c in changes}
    assert got == {bus: ("habits", "llm"), k8s: ("skills", "llm"),
                   dark: ("preferences", "heuristic"), chinese: ("decisions", "heuristic")}
    assert (await h.engine.reads.read(weather, Caller())).phase == "inbox"  # "nothing fits"
    assert (await h.engine.reads.read(bus, Caller())).category == "habits"
    (request,) = llm.requests  # one batch
    assert request["path"] == "/v1/chat/completions"
    assert request["body"]["model"] == "tiny" and request["body"]["temperature"] == 0
    schema = request["body"]["response_format"]["json_schema"]  # the LLM contract
    assert schema["name"] == "classify" and schema["strict"] is True
    assert request["headers"]["Authorization"] == "Bearer sk-test"


async def test_a_failing_or_unreachable_llm_falls_back_to_the_heuristics(make_harness):
    with ScriptedLlm(lambda body: (500, '{"error": "overloaded"}')) as llm:
        h = await make_harness({"llm": {"url": llm.url, "model": "tiny", "batch_size": 2,
                                        "retries": 1}})
        ids = [await h.write(t) for t in ("I learned the hard way: pin versions",
                                          "Alice prefers tea", "I take the bus")]
        changes = await dream.run(h.engine, NOW, dry_run=True, level=1)
        assert len(llm.requests) == 4  # two batches, each tried twice (HTTP 500 retried)
    assert {c.id: (c.after["category"], c.after["by"]) for c in changes} == {
        ids[0]: ("lessons", "heuristic"),
        ids[1]: ("people", "heuristic")}  # Alice's preference: a note about Alice
    assert h.engine.llm.failures == 2
    # Nothing listens there any more: refused at once, same fallback.
    changes = await dream.run(h.engine, NOW, dry_run=False, level=1)
    assert {c.after["by"] for c in changes} == {"heuristic"} and len(changes) == 2


async def test_an_answer_without_json_is_a_counted_failure(make_harness):
    with ScriptedLlm(lambda body: completion("Sorry, I can't sort these.")) as llm:
        h = await make_harness({"llm": {"url": llm.url, "model": "tiny"}})
        note = await h.write("Alice prefers tea")
        changes = await dream.run(h.engine, NOW, dry_run=False, level=1)
    assert [(c.id, c.after["by"]) for c in changes] == [(note, "heuristic")]
    assert (h.engine.llm.calls, h.engine.llm.failures) == (1, 1)
