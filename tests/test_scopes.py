"""Scopes as users expect them (README "Security model"): agents share `global` by
default and keep a private scope only when they name it; the user's own tooling sees
everything; a name never collapses into another agent's scope or into full access."""

from __future__ import annotations

import json

import pytest
import trio

from memoryd.config import Config
from memoryd.protocol.dispatch import Connection
from memoryd.scopes import agent_scope
from memoryd.server.app import App
from memoryd.server.wiring import build_dispatcher, build_engine
from tests.fakes import FakeEmbedder, MemoryVectors


@pytest.fixture
async def rig(tmp_path):
    engine = build_engine(tmp_path, Config(), embedder=FakeEmbedder(), vectors=MemoryVectors())
    await engine.sync.startup()
    app = App(engine=engine, config=Config(), root=tmp_path, socket_path=tmp_path / "s")
    yield engine, build_dispatcher(app)
    engine.close()


class Client:
    def __init__(self, dispatcher, name: str | None = None, **init) -> None:
        self.dispatcher = dispatcher
        self.conn = Connection()
        self.name = name
        self.init = init

    async def start(self) -> dict:
        params = dict(self.init)
        if self.name is not None:
            params["clientInfo"] = {"name": self.name}
        return await self.ok("initialize", **params)

    async def call(self, method: str, **params) -> dict:
        line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        return json.loads(await self.dispatcher.handle(line.encode(), self.conn))

    async def ok(self, method: str, **params) -> dict:
        reply = await self.call(method, **params)
        assert "result" in reply, reply
        return reply["result"]

    async def code(self, method: str, **params) -> int:
        return (await self.call(method, **params))["error"]["code"]


def test_agent_names_map_to_distinct_scopes():
    assert agent_scope("claude") == "agent:claude"
    assert agent_scope("Claude Code") == "agent:Claude-Code"
    assert agent_scope("../../x") != agent_scope("x")
    for name in ("助手", "ü", "🙂"):
        scope = agent_scope(name)
        assert scope.startswith("agent:agent-") and len(scope) > len("agent:agent-")
    assert agent_scope("助手") != agent_scope("ü")
    assert len(agent_scope("n" * 500)) <= len("agent:") + 64


async def test_agents_share_global_and_keep_private_only_what_they_name(rig):
    _, dispatcher = rig
    claude, codex, user = (Client(dispatcher, "claude"), Client(dispatcher, "codex"),
                           Client(dispatcher))
    init = await claude.start()
    assert (init["scope"], init["agent"]) == ("global", "agent:claude")
    await codex.start()
    shared = await claude.ok("memory_write", content="the user likes tea")
    private = await claude.ok("memory_write", content="claude's own scratch note",
                              scope="agent:claude")
    assert shared["scope"] == "global"
    seen = {m["id"] for m in (await codex.ok("memory_list"))["memories"]}
    assert seen == {shared["id"]}
    assert await codex.code("memory_read", id=private["id"]) == -32003
    # the user's own tooling reads every scope by default
    mine = await user.ok("memory_list")
    assert {m["id"] for m in mine["memories"]} == {shared["id"], private["id"]}
    assert (await user.ok("memory_search", query="note"))["total"] == 1


async def test_initialize_may_choose_where_writes_go(rig):
    _, dispatcher = rig
    bot = Client(dispatcher, "bot", scope="agent:bot")
    assert (await bot.start())["scope"] == "agent:bot"
    assert (await bot.ok("memory_write", content="private by default"))["scope"] == "agent:bot"
    intruder = Client(dispatcher, "eve", scope="agent:bot")
    assert (await intruder.call("initialize", clientInfo={"name": "eve"}, scope="agent:bot")
            )["error"]["code"] == -32003


async def test_names_that_clean_to_nothing_are_restricted_agents(rig):
    _, dispatcher = rig
    owner = Client(dispatcher, "x")
    await owner.start()
    secret = await owner.ok("memory_write", content="x's secret", scope="agent:x")
    for name in ("助手", "ü", "../../x", " "):
        other = Client(dispatcher, name)
        init = await other.start()
        if name.strip():
            assert init["agent"] not in (None, "agent:x")
            assert await other.code("memory_read", id=secret["id"]) == -32003
            assert await other.code("jobs/run", job="expire") == -32003


async def test_an_agent_sees_its_own_figures_in_stats(rig):
    _, dispatcher = rig
    a, b, user = Client(dispatcher, "a"), Client(dispatcher, "b"), Client(dispatcher)
    await a.start()
    await b.start()
    await a.ok("memory_write", content="a private", scope="agent:a")
    await b.ok("memory_write", content="shared one")
    stats = await b.ok("stats")
    assert stats["by_scope"] == {"global": 1} and stats["memories"] == 1
    assert (await a.ok("stats"))["by_scope"] == {"global": 1, "agent:a": 1}
    assert (await user.ok("stats"))["memories"] == 2


async def test_hand_edit_notifications_reach_only_who_may_see_the_scope(rig, tmp_path):
    engine, dispatcher = rig
    a, b = Client(dispatcher, "a"), Client(dispatcher, "b")
    await a.start()
    await b.start()
    await a.ok("events/subscribe")
    await b.ok("events/subscribe")
    (tmp_path / "categories" / "knowledge" / "mine.md").write_text(
        "---\nscope: agent:b\n---\nb's note, edited by hand")
    await engine.sync.sync_paths(["categories/knowledge/mine.md"])
    with trio.fail_after(5):
        _, seen_by_b = await b.conn.subscription.receive.receive()
    assert seen_by_b["event"] == "written" and seen_by_b["by"] == "hand edit"
    with pytest.raises(trio.WouldBlock):
        a.conn.subscription.receive.receive_nowait()
