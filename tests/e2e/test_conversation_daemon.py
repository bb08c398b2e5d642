"""Conversation memory through a real daemon (real model, real chromadb, real socket):
a user turn becomes facts and a summary in the background, with and without an LLM,
and recall for a later question holds both facts."""

from __future__ import annotations

import json

import pytest

from tests.e2e.test_lifecycle import wait_for
from tests.e2e.test_memoryctl import ctl, ok
from tests.engine.test_facts_llm import task_of
from tests.llm_server import ScriptedLlm, completion

TURN = "My wife is named Anne and I hate mushrooms"
QUESTION = "what should I cook for my wife tonight?"


def _learn_and_recall(d) -> dict:
    stored = d.call("memory_remember", {"session": "dinner", "role": "user", "content": TURN})
    assert stored["stored"] is True
    reply = d.call("memory_remember", {"session": "dinner", "role": "assistant",
                                       "content": "Noted! Anne it is, and no mushrooms."})
    assert reply["stored"] is True
    wait_for(lambda: d.call("stats")["backlog"] == 0, timeout=60, what="the backlog to drain")
    facts = d.call("memory_search", {"query": "user", "kind": "fact"})["memories"]
    assert len(facts) == 2 and all(f["derived_from"] == [stored["id"]] for f in facts)
    return d.call("memory_recall", {"query": QUESTION, "session": "dinner"})


def test_a_turn_becomes_facts_without_an_llm(make_daemon):
    d = make_daemon().start()
    recalled = _learn_and_recall(d)
    assert "The user's wife is named Anne." in recalled["text"]
    assert "The user hates mushrooms." in recalled["text"]
    assert f'[RECENT]\nuser: "{TURN}"' in recalled["text"]
    assert (d.root / "sessions" / "dinner" / "summary.md").exists()


@pytest.mark.parametrize("structured", [True, False])
def test_a_turn_becomes_facts_with_an_llm(make_daemon, structured):
    def answer(body):
        task = task_of(body)
        if task == "facts":
            return completion(json.dumps({"facts": ["The user's wife is named Anne",
                                                    "The user hates mushrooms"]}))
        if task == "importance":
            return completion('{"importance": 0.8}')
        if task == "summary":
            return completion('{"summary": "The user\'s wife is Anne; no mushrooms."}')
        return 500, "{}"

    with ScriptedLlm(answer) as llm:
        config = (f"llm: {{url: '{llm.url}', model: tiny, timeout: 5s, "
                  f"structured_output: {str(structured).lower()}}}\n")
        d = make_daemon(config=config).start()
        recalled = _learn_and_recall(d)
        asked = [task_of(r["body"]) for r in llm.requests]
    assert "The user's wife is named Anne" in recalled["text"]
    assert "The user hates mushrooms" in recalled["text"]
    assert "[SUMMARY] The user's wife is Anne; no mushrooms." in recalled["text"]
    # The assistant's turn is judged for importance but never mined for facts.
    assert asked.count("facts") == 1 and asked.count("importance") == 2


def test_memoryctl_remember_add_history_and_recall(make_daemon):
    d = make_daemon().start()
    turn = ok(d, "remember", "trip", "user", "-", stdin="I live in Boston with my sister")
    assert turn["stored"] is True
    wait_for(lambda: d.call("stats")["backlog"] == 0, timeout=60, what="the backlog to drain")
    moved = ok(d, "add", "I moved to Denver", "--session", "trip")
    (fact,) = moved["facts"]
    assert moved["path"] == "heuristic" and fact["event"] == "UPDATE"
    history = ok(d, "history", fact["id"])
    assert [v["current"] for v in history["versions"]] == [False, True]
    text = ctl(d, "recall", "where does my sister live?", "--session", "trip")
    assert text.returncode == 0 and "[RECENT]" in text.stdout, text.stderr
    plain = ctl(d, "add", "My favorite color is green")
    assert plain.returncode == 0 and "ADD" in plain.stdout, plain.stderr
