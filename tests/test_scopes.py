"""Scopes as users expect them (docs/security.md): agents share `global` by
default and keep a private scope only when they name it; the user's own tooling sees
everything; a name never collapses into another agent's scope or into full access."""

from __future__ import annotations

import sys

import pytest
import trio

from memoryd.protocol.dispatch import Connection
from memoryd.scopes import agent_scope
from tests.rig import Rig


class Client:
    """One connection of the rig: a named agent, or the user's own tooling."""

    def __init__(self, rig: Rig, name: str | None = None, **init) -> None:
        self.rig = rig
        self.conn = Connection()
        self.name = name
        self.init = init

    async def start(self) -> dict:
        params = dict(self.init)
        if self.name is not None:
            params["clientInfo"] = {"name": self.name}
        return await self.ok("initialize", **params)

    async def call(self, method: str, **params) -> dict:
        return await self.rig.call(method, self.conn, **params)

    async def ok(self, method: str, **params) -> dict:
        return await self.rig.result(method, self.conn, **params)

    async def code(self, method: str, **params) -> int:
        return (await self.rig.error(method, self.conn, **params))["code"]


def test_agent_names_map_to_distinct_scopes():
    assert agent_scope("claude") == "agent:claude"
    assert agent_scope("claude-code") == "agent:claude-code"
    assert agent_scope("Claude Code").startswith("agent:Claude-Code-")
    assert len({agent_scope(n) for n in ("my agent", "my-agent", "my  agent", " my agent",
                                         "my\tagent", "my_agent", "my.agent")}) == 7
    long = "n" * 64
    assert agent_scope(long) == f"agent:{long}"
    assert len({agent_scope(long), agent_scope(long + "a"), agent_scope(long + "b")}) == 3
    assert agent_scope("../../x") != agent_scope("x")
    for name in ("助手", "ü", "🙂"):
        scope = agent_scope(name)
        assert scope.startswith("agent:agent-") and len(scope) > len("agent:agent-")
    assert agent_scope("助手") != agent_scope("ü")
    assert len(agent_scope("n" * 500)) <= len("agent:") + 64


async def test_agents_share_global_and_keep_private_only_what_they_name(rig):
    claude, codex, user = (Client(rig, "claude"), Client(rig, "codex"),
                           Client(rig))
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
    bot = Client(rig, "bot", scope="agent:bot")
    assert (await bot.start())["scope"] == "agent:bot"
    assert (await bot.ok("memory_write", content="private by default"))["scope"] == "agent:bot"
    intruder = Client(rig, "eve", scope="agent:bot")
    assert (await intruder.call("initialize", clientInfo={"name": "eve"}, scope="agent:bot")
            )["error"]["code"] == -32003


async def test_names_that_clean_to_nothing_are_restricted_agents(rig):
    owner = Client(rig, "x")
    await owner.start()
    secret = await owner.ok("memory_write", content="x's secret", scope="agent:x")
    for name in ("助手", "ü", "../../x", " "):
        other = Client(rig, name)
        init = await other.start()
        if name.strip():
            assert init["agent"] not in (None, "agent:x")
            assert await other.code("memory_read", id=secret["id"]) == -32003
            assert await other.code("jobs/run", job="expire") == -32003


async def test_an_agent_sees_its_own_figures_in_stats(rig):
    a, b, user = Client(rig, "a"), Client(rig, "b"), Client(rig)
    await a.start()
    await b.start()
    await a.ok("memory_write", content="a private", scope="agent:a")
    await b.ok("memory_write", content="shared one")
    stats = await b.ok("stats")
    assert stats["by_scope"] == {"global": 1} and stats["memories"] == 1
    assert (await a.ok("stats"))["by_scope"] == {"global": 1, "agent:a": 1}
    assert (await user.ok("stats"))["memories"] == 2


async def test_only_the_user_sees_what_the_daemons_memory_holds(rig):
    """`stats.memory` measures the whole store (every scope's rows): the user's own
    tooling sees it, an agent does not."""
    agent, user = Client(rig, "a"), Client(rig)
    await agent.start()
    before = (await user.ok("stats"))["memory"]
    for i in range(5):
        await user.ok("memory_write", content=f"note {i} about the harbour")
    after = (await user.ok("stats"))["memory"]
    assert after["index_mb"]["rows"] >= before["index_mb"]["rows"]
    assert after["index_mb"]["capacity"] >= after["index_mb"]["rows"]
    assert after["embedder_cache"]["texts"] > before["embedder_cache"]["texts"]
    assert after["vectors_process_mb"] is None, "the rig's vectors live in its process"
    assert after["model_process_mb"] is None, "and its embedder starts none"
    if sys.platform == "linux":
        assert 0 < after["anonymous_mb"] <= after["rss_mb"]
    assert "memory" not in await agent.ok("stats")


async def test_hand_edit_notifications_reach_only_who_may_see_the_scope(rig, tmp_path):
    a, b = Client(rig, "a"), Client(rig, "b")
    await a.start()
    await b.start()
    await a.ok("events/subscribe")
    await b.ok("events/subscribe")
    (tmp_path / "categories" / "knowledge" / "mine.md").write_text(
        "---\nscope: agent:b\n---\nb's note, edited by hand")
    await rig.engine.sync.sync_paths(["categories/knowledge/mine.md"])
    with trio.fail_after(5):
        _, seen_by_b = await b.conn.subscription.receive.receive()
    assert seen_by_b["event"] == "written" and seen_by_b["by"] == "hand edit"
    with pytest.raises(trio.WouldBlock):
        a.conn.subscription.receive.receive_nowait()


async def test_a_project_scope_is_shared_by_agents_and_read_with_global(rig):
    """Every agent that works in a repository reads and writes its `project:*` scope;
    `project` reads it with `global`, and no other project's memories."""
    claude, gemini, user = Client(rig, "claude-code"), Client(rig, "gemini-cli"), Client(rig)
    for client in (claude, gemini, user):
        await client.start()
    shop, other = "project:shop-1a2b3c4d", "project:blog-9f8e7d6c"
    await claude.ok("memory_write", content="The shop deploys with Kamal to Hetzner.",
                    category="decisions", scope=shop)
    await user.ok("memory_write", content="The blog deploys with Netlify previews.",
                  category="decisions", scope=other)
    await user.ok("memory_write", content="The user prefers short commit messages.",
                  category="preferences")
    recalled = await gemini.ok("memory_recall", query="how does it deploy?", project=shop)
    assert "Kamal" in recalled["text"] and "Netlify" not in recalled["text"]
    found = await gemini.ok("memory_smart_search", query="deploys", project=shop)
    assert {m["scope"] for m in found["memories"]} <= {shop, "global"}
    assert await gemini.code("memory_recall", query="deploy", project=shop,
                             scope="global") == -32602
    assert await gemini.code("memory_recall", query="deploy", project="agent:x") == -32602
    assert await gemini.code("memory_list", scope="agent:claude-code") == -32003
    listed = await gemini.ok("memory_list", scope=shop)
    assert [m["content"][:8] for m in listed["memories"]] == ["The shop"]


async def test_context_opens_a_session_with_how_to_behave_and_what_was_decided(rig):
    shop = "project:shop-1a2b3c4d"
    user = Client(rig)
    await user.start()
    await user.ok("memory_write", content="Always run `make check` before committing.",
                  category="habits", type="procedural", importance=0.9, scope=shop)
    await user.ok("memory_write", content="We chose Postgres over MySQL for the shop.",
                  category="decisions", scope=shop)
    await user.ok("memory_write", content="The blog uses Hugo.", category="decisions",
                  scope="project:blog-9f8e7d6c")
    await user.ok("memory_add", text="I live in Lisbon.", scope="global")
    made = await user.ok("memory_context", project=shop)
    lines = made["text"].splitlines()
    assert lines[0] == "<memory>" and lines[-1] == "</memory>"
    assert "make check" in lines[1]  # how to behave first
    assert lines.index(next(x for x in lines if "Postgres" in x)) < lines.index(
        next(x for x in lines if "Lisbon" in x))  # the project's before global's
    assert "Hugo" not in made["text"]
    small = await user.ok("memory_context", project=shop, token_budget=40)
    assert small["total_tokens"] <= 40
    empty = await user.ok("memory_context", project="project:none-00000000")
    assert "Lisbon" in empty["text"] and "Postgres" not in empty["text"]


@pytest.mark.parametrize("name", ["", " ", "\t\n"])
async def test_a_blank_agent_name_is_an_agent_not_the_user(rig, name):
    """clientInfo with an empty or blank name names an agent (a hashed scope of its
    own), never the user's own tooling with every scope."""
    private = await Client(rig, "claude").ok("memory_write", content="claude's own",
                                             scope="agent:claude")
    blank = Client(rig, name)
    init = await blank.start()
    assert init["agent"] is not None and init["agent"].startswith("agent:agent-")
    assert await blank.code("memory_read", id=private["id"]) == -32003
    assert await blank.code("jobs/run", job="expire") == -32003
