"""A session is one scope's: another agent can neither add to it nor read its summary,
and an import can neither replace nor tell of a memory the importer cannot see."""

from __future__ import annotations

import json

from memoryd.errors import Forbidden
from tests.rig import Rig
from tests.test_scopes import Client


async def two_agents(tmp_path) -> tuple[Rig, Client, Client]:
    rig = Rig(tmp_path)
    await rig.start()
    a = Client(rig, "alice-bot", scope="agent:alice-bot")  # A keeps to its own scope
    b = Client(rig, "bob-bot")
    await a.start()
    await b.start()
    return rig, a, b


async def test_another_agent_cannot_add_to_a_session_nor_read_its_summary(tmp_path):
    rig, a, b = await two_agents(tmp_path)
    try:
        await a.ok("memory_remember", session="plans", role="user",
                   content="My sister Ann is moving to Oslo in March")
        await a.ok("memory_add", text="My sister Ann lives in Oslo.", session="plans")
        await rig.engine.learning.drain()
        own = await a.ok("memory_recall", query="where is Ann moving", session="plans")
        assert own["summary_included"] and "Oslo" in own["text"]
        # B names A's session: no summary, no turns, no memories of A's scope
        peek = await b.ok("memory_recall", query="where is Ann moving", session="plans")
        assert not peek["summary_included"] and "Oslo" not in peek["text"]
        assert peek["recent"] == []
        prompt = await b.ok("prompts/get", name="memory",
                            arguments={"query": "Ann", "session": "plans"})
        assert "Oslo" not in prompt["messages"][0]["content"]["text"]
        # B cannot add to it, whatever the way in
        for method, params in (
                ("memory_remember", {"role": "user", "content": "Ann hates Oslo, actually"}),
                ("memory_write", {"content": "Ann hates Oslo", "role": "user"}),
                ("memory_add", {"text": "Ann hates Oslo"})):
            error = await rig.error(method, b.conn, session="plans", **params)
            assert error["code"] == Forbidden.code, (method, error)
            assert "agent:alice-bot" not in error["message"], "the owner is not named"
        mine = await a.ok("memory_recall", query="Ann", session="plans")
        assert "hates" not in mine["text"] and all(
            "hates" not in m["content"] for m in mine["recent"])
        # B's own sessions are B's
        assert (await b.ok("memory_remember", session="bob-plans", role="user",
                           content="Remind me to water the basil"))["stored"]
    finally:
        rig.close()


async def test_an_import_neither_replaces_nor_reveals_what_the_importer_cannot_see(tmp_path):
    rig, a, b = await two_agents(tmp_path)
    try:
        private = await a.ok("memory_write", content="Alice's door code is 4711",
                             category="knowledge")
        line = json.dumps({"id": private["id"], "content": "overwritten by bob",
                           "scope": "global", "category": "knowledge"})
        answers = [await b.ok("memory_import", lines=[line], on_conflict=rule)
                   for rule in ("replace", "skip", "keep-both")]
        fresh = json.dumps({"id": "00000000-0000-4000-8000-00000000b0b0",
                            "content": "bob's own note", "scope": "global",
                            "category": "knowledge"})
        for answer in answers:
            assert (answer["imported"], answer["replaced"], answer["skipped"],
                    answer["kept_both"]) == (0, 0, 0, 0), answer
            assert "cannot be imported" in answer["failed"][0]["reason"]
        kept = await a.ok("memory_read", id=private["id"])
        assert kept["content"] == "Alice's door code is 4711"
        assert kept["scope"] == "agent:alice-bot"
        assert (await b.ok("memory_import", lines=[fresh]))["imported"] == 1
        # a line into A's session is refused too, and the rest of the batch goes on
        turn = json.dumps({"id": "00000000-0000-4000-8000-00000000b0b1", "content": "hi",
                           "scope": "global", "session": "plans", "kind": "turn",
                           "role": "user"})
        await a.ok("memory_remember", session="plans", role="user",
                   content="A private plan for the weekend trip")
        mixed = await b.ok("memory_import", lines=[turn, json.dumps({
            "id": "00000000-0000-4000-8000-00000000b0b2", "content": "another of bob's",
            "scope": "global", "category": "knowledge"})])
        assert mixed["imported"] == 1 and "belongs to another scope" in (
            mixed["failed"][0]["reason"])
    finally:
        rig.close()
