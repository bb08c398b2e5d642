"""`memoryctl mcp` driven by the official MCP Python SDK (stdio_client + ClientSession),
as Claude Desktop, Cursor or any SDK-based host runs it: a real daemon, a real bridge
process, the SDK's own validation of every result against its outputSchema."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from memoryd.tools.spec import SPECS


def _server(daemon) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "memoryctl", "mcp"],
                                 env={**os.environ, "MEMORY_HOME": str(daemon.root)})


def _run(coro_fn, *args):
    return anyio.run(coro_fn, *args)


def test_an_mcp_host_uses_the_tools_and_the_prompt(daemon, tmp_path: Path):
    notes = tmp_path / "vault"
    notes.mkdir()
    for i in range(30):
        (notes / f"note {i}.md").write_text(f"# Note {i}\n\nHiking trip number {i}.\n")
    progress: list[tuple[float, float | None, str | None]] = []

    async def host():
        async with stdio_client(_server(daemon)) as (read, write), \
                ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "memoryd"
            assert init.capabilities.prompts is not None
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert list(tools) == list(SPECS)
            write_tool = tools["memory_write"]
            assert write_tool.title == "Remember a note"
            assert write_tool.annotations.read_only_hint is False
            assert tools["memory_search"].annotations.read_only_hint is True
            assert tools["memory_delete"].annotations.destructive_hint is True
            assert tools["memory_delete"].annotations.idempotent_hint is True
            assert all(t.output_schema and t.output_schema["type"] == "object"
                       for t in tools.values())

            # call_tool validates structuredContent against the outputSchema itself
            wrote = await session.call_tool("memory_write", {
                "content": "My name is Alice and I love hiking", "category": "people"})
            assert not wrote.is_error
            memory_id = wrote.structured_content["id"]
            found = await session.call_tool("memory_search", {"query": "Alice"})
            assert found.structured_content["total"] == 1
            ranked = await session.call_tool("memory_smart_search",
                                             {"query": "what is my name"})
            assert ranked.structured_content["memories"][0]["id"] == memory_id
            recalled = await session.call_tool("memory_recall", {"query": "who am I"})
            assert "Alice" in recalled.structured_content["text"]
            said = await session.call_tool("memory_remember", {
                "session": "chat-1", "role": "user",
                "content": "I am planning a trip to the Dolomites in June"})
            assert said.structured_content["stored"] is True

            # a bad call is a result the model can read, not a protocol error
            bad = await session.call_tool("memory_read", {"id": "no-such-memory"})
            assert bad.is_error
            assert "no memory with id 'no-such-memory'" in bad.content[0].text
            invalid = await session.call_tool("memory_write", {"content": ""})
            assert invalid.is_error and "content" in invalid.content[0].text

            # progress notifications of a long call come through the bridge
            async def on_progress(done: float, total: float | None, message: str | None):
                progress.append((done, total, message))

            ingested = await session.call_tool(
                "memory_ingest", {"source": "markdown", "path": str(notes)},
                progress_callback=on_progress)
            assert ingested.structured_content["added"] == 30

            prompts = (await session.list_prompts()).prompts
            assert [p.name for p in prompts] == ["memory"]
            assert prompts[0].arguments[0].name == "query"
            got = await session.get_prompt("memory", {"query": "what is my name"})
            text = got.messages[0].content.text
            assert text.startswith("<memory>") and "Alice" in text

    _run(host)
    assert progress, "no progress notification reached the host"
    assert progress[-1][0] == progress[-1][1]  # the last one says done
    # what the host said is visible to the user (facts learned from it may follow)
    with daemon.client() as c:
        turns = c.call("memory_search", {"query": "Dolomites", "kind": "turn"})
        assert turns["total"] == 1 and turns["memories"][0]["session"] == "chat-1"
