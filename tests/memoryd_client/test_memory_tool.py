"""The Anthropic API's memory tool backed by memoryd, against a real daemon: each
command as the API sends it, through the official `anthropic` package's
BetaAbstractMemoryTool; the replies are the SDK's own file-system tool's, the files
are memories (searched, versioned, redacted), paths never leave /memories."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from anthropic.lib.tools import ToolError
from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool

from memoryd_client import Client
from memoryd_client.memory_tool import MemoryTool, MemoryToolError, anthropic_memory_tool

SCRIPT = [  # what Claude might send over a conversation, as the API's tool_use inputs
    {"command": "view", "path": "/memories"},
    {"command": "create", "path": "/memories/user/preferences.md",
     "file_text": "# Preferences\n- prefers tea\n- works in Lisbon\n"},
    {"command": "create", "path": "/memories/projects/kestrel.md",
     "file_text": "Kestrel deploys on Tuesdays.\n"},
    {"command": "view", "path": "/memories"},
    {"command": "str_replace", "path": "/memories/user/preferences.md",
     "old_str": "works in Lisbon", "new_str": "works in Berlin"},
    {"command": "insert", "path": "/memories/user/preferences.md", "insert_line": 1,
     "insert_text": "- vegetarian"},
    {"command": "view", "path": "/memories/user/preferences.md"},
    {"command": "view", "path": "/memories/user/preferences.md", "view_range": [2, 3]},
    {"command": "rename", "old_path": "/memories/projects", "new_path": "/memories/work"},
    {"command": "view", "path": "/memories/work/kestrel.md"},
    {"command": "delete", "path": "/memories/work"},
    {"command": "view", "path": "/memories"},
]
ERRORS = [
    {"command": "create", "path": "/memories/user/preferences.md", "file_text": "again"},
    {"command": "view", "path": "/memories/nowhere.md"},
    {"command": "view", "path": "/etc/passwd"},
    {"command": "view", "path": "/memories/../etc/passwd"},
    {"command": "str_replace", "path": "/memories/user/preferences.md", "old_str": "coffee",
     "new_str": "tea"},
    {"command": "insert", "path": "/memories/user/preferences.md", "insert_line": 99,
     "insert_text": "x"},
    {"command": "delete", "path": "/memories"},
]


def _run(tool, commands: list[dict]) -> list[str]:
    """Each reply, a listing's sizes left out (a folder's is its inode's on a disk)."""
    out = []
    for command in commands:
        try:
            reply = tool.call(dict(command))
        except ToolError as exc:
            reply = f"error: {exc}"
        if reply.startswith("Here're the files"):
            reply = re.sub(r"(?m)^[0-9.]+[BKMG]\t", "", reply)
        out.append(reply)
    return out


def test_every_command_answers_as_the_sdks_own_tool(daemon, tmp_path: Path):
    with Client(daemon.socket, name="app") as client:
        ours = anthropic_memory_tool(MemoryTool(client))
        theirs = BetaLocalFilesystemMemoryTool(str(tmp_path / "memory"))
        assert _run(ours, SCRIPT + ERRORS) == _run(theirs, SCRIPT + ERRORS)


def test_the_files_are_memories_searched_versioned_and_redacted(daemon):
    with Client(daemon.socket, name="app") as client:
        tool = MemoryTool(client)
        tool.execute({"command": "create", "path": "/memories/ops.md",
                      "file_text": "CI token ghp_Q7w3E9r1T5y8U2i4O6p0A1s3D5f7G9h2J4k6\n"
                                   "Deploys go through staging.\n"})
        tool.execute({"command": "str_replace", "path": "/memories/ops.md",
                      "old_str": "staging", "new_str": "canary"})
        found = client.call("memory_smart_search", {"query": "how do deploys go out?",
                                                    "top_k": 1})["memories"][0]
        assert found["content"].startswith("# /memories/ops.md\n")
        assert "canary" in found["content"] and "ghp_" not in found["content"]
        assert found["source"] == "memory-tool" and found["version"] == 2
        history = client.call("memory_history", {"id": found["id"]})["versions"]
        assert any("staging" in v["content"] for v in history)
        shown = tool.execute({"command": "view", "path": "/memories/ops.md"})
        assert "[REDACTED:github]" in shown


def test_paths_that_leave_the_tree_are_refused_before_any_call():
    tool = MemoryTool(client=None)  # type: ignore[arg-type]  # never reached
    for path in ("/etc", "memories/x", "/memories/../x", "/memoriesx/y"):
        with pytest.raises(MemoryToolError):
            tool.execute({"command": "view", "path": path})


def test_a_path_cannot_shadow_a_file_and_every_failure_is_a_tool_error(daemon):
    """`a.md ` or `a.md\\n` would read back as `a.md` (a second file shadowing it); a
    folder moved into itself; a command missing a field or refused by the daemon: each
    is a ToolError the model is told, through the official SDK's tool."""
    with Client(daemon.socket) as client:
        tool = anthropic_memory_tool(MemoryTool(client))
        tool.call({"command": "create", "path": "/memories/a/notes.md", "file_text": "one\n"})
        for command in (
                {"command": "create", "path": "/memories/a/notes.md ", "file_text": "two"},
                {"command": "create", "path": "/memories/a/notes.md\n", "file_text": "two"},
                {"command": "create", "path": "/memories/a /notes.md", "file_text": "two"},
                {"command": "rename", "old_path": "/memories/a", "new_path": "/memories/a/b"},
                {"command": "create", "path": "/memories/big.md",
                 "file_text": "x" * (300 * 1024)},  # refused by the daemon: too long
        ):
            with pytest.raises(ToolError):
                tool.call(command)
        with pytest.raises(MemoryToolError, match="Invalid 'create' command"):
            MemoryTool(client).execute({"command": "create", "path": "/memories/c.md"})
        shown = tool.call({"command": "view", "path": "/memories/a/notes.md"})
        assert "1\tone\n" in shown and "two" not in shown  # the file as it was
