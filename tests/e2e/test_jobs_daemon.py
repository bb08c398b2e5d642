"""decay-sweep and LLM-backed dream through a real daemon: socket, files, restart."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import yaml

from tests.e2e.test_memoryctl import ctl, ok
from tests.jobs.test_decay_sweep import MONGO, REDIS
from tests.llm_server import ScriptedLlm, completion

OLD = datetime.now(UTC) - timedelta(days=40)
TALK = [*REDIS, MONGO]


def _front(path):
    return yaml.safe_load(path.read_text().split("---")[1])


def test_decay_sweep_builds_the_topic_graph_that_survives_a_restart(make_daemon):
    d = make_daemon(config="graph: {max_nodes: 1}\n").start()
    turns = []
    for i, (user, reply) in enumerate(TALK):
        at = OLD + timedelta(minutes=10 * i)
        for role, text, when in (("user", user, at),
                                 ("assistant", reply, at + timedelta(seconds=30))):
            turns.append(d.call("memory_write", {"content": text, "role": role,
                                                 "session": "chat-1",
                                                 "created_at": when.isoformat()}))
    recent = d.call("memory_write", {"content": "and today?", "role": "user",
                                     "session": "chat-1"})
    dry = ok(d, "run", "decay-sweep", "--dry-run")
    assert dry["dry_run"] and len(dry["changes"]) == 8
    shown = ctl(d, "run", "decay-sweep").stdout
    assert shown.startswith("decay-sweep: changed 8")
    files = {t["id"]: _front(next(d.root.glob(f"sessions/chat-1/turns/*__{t['id']}.md")))
             for t in [*turns, recent]}
    assert files[turns[0]["id"]]["episode"] == files[turns[1]["id"]]["episode"]
    assert files[turns[0]["id"]]["topic"] == files[turns[4]["id"]]["topic"]  # all Redis
    assert files[turns[6]["id"]]["topic"] != files[turns[0]["id"]]["topic"]  # MongoDB
    assert "episode" not in files[recent["id"]]  # five minutes old at most: not cold
    assert d.call("stats")["graph"] == {"nodes": 2, "episodes": 4, "edges": 0}
    # A retrieval where both topics score >= 0.6 joins them; the next one expands.
    query = {"query": "how do we cache sessions in redis"}
    d.call("memory_smart_search", query)
    explained = d.call("memory_explain", query)
    assert [t["via"] for t in explained["topics"]][1:] == [explained["topics"][0]["node"]]
    assert d.stop() == 0

    d.start()  # the graph (and its edge) come back from graph.sqlite
    again = d.call("memory_explain", query)
    assert again["topics"] == explained["topics"]
    (d.root / "index" / "graph.sqlite").unlink()
    assert d.stop() == 0
    d.start()  # nodes rebuilt from the turn files, under the same ids; the edge is gone
    rebuilt = d.call("memory_explain", query)
    assert [t["node"] for t in rebuilt["topics"]] == [explained["topics"][0]["node"]]


def test_dream_classifies_with_the_configured_llm(make_daemon):
    def answer(body):
        return completion('{"1": "habits"}')

    with ScriptedLlm(answer) as llm:
        d = make_daemon(config=f"llm: {{url: '{llm.url}', model: tiny}}\n").start()
        note = d.call("memory_write", {"content": "I take the bus to work"})
        out = ok(d, "dream", "--level", "1")
        assert [(c["id"], c["after"]["by"]) for c in out["changes"]] == [(note["id"], "llm")]
        assert d.call("memory_read", {"id": note["id"]})["category"] == "habits"
        assert len(llm.requests) == 1
        assert d.call("stats")["llm"] == {"configured": True, "model": "tiny",
                                          "endpoint": f"{llm.url}/chat/completions",
                                          "calls": 1, "failures": 0, "last_error": None}
