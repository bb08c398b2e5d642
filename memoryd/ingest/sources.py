"""The ingest sources: one definition of their names, default folders and readers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from memoryd.ingest import (
    chatgpt,
    claude,
    claude_code,
    codex,
    gemini,
    logseq,
    mcp_memory,
    obsidian,
    plain,
)
from memoryd.ingest.document import Scan

SourceName = Literal["claude", "claude-code", "logseq", "obsidian", "car-agent",
                     "fingersaver", "markdown", "mcp-memory", "chatgpt", "codex", "gemini"]


@dataclass(frozen=True)
class Transcripts:
    """A source whose files are session transcripts: which files are (`holds`, a path
    within the source's folder), and a reader of one of them (a hook hands the file of
    the session it runs in)."""

    holds: Callable[[str], bool]
    read_one: Callable[[Path, str], Scan]


@dataclass(frozen=True)
class IngestSource:
    name: str
    default: str | None  # the folder read when no path is given (~ is the home folder)
    read: Callable[[Path], Scan]
    what: str
    transcripts: Transcripts | None = None


SOURCES: dict[str, IngestSource] = {s.name: s for s in (
    IngestSource("claude", "~/.claude", claude.read,
                 "CLAUDE.md files (the user's and each project's) and "
                 "projects/*/memory/*.md"),
    IngestSource("claude-code", "~/.claude", claude_code.read,
                 "session transcripts projects/<project>/<session>.jsonl, as turns",
                 Transcripts(claude_code.holds, claude_code.read)),
    IngestSource("logseq", "~/logseq", logseq.read, "a graph's pages/ and journals/"),
    IngestSource("obsidian", None, obsidian.read, "a vault's Markdown notes"),
    IngestSource("car-agent", "~/.car-agent", plain.car_agent,
                 "every .md file, truncated to 5000 characters"),
    IngestSource("fingersaver", "~/.fingersaver", plain.fingersaver,
                 "chat.md, truncated to 5000 characters"),
    IngestSource("markdown", None, plain.markdown, "any folder of .md files"),
    IngestSource("mcp-memory", None, mcp_memory.read,
                 "the MCP memory server's memory.json(l): entities as notes, relations "
                 "as links"),
    IngestSource("codex", "~/.codex", codex.read,
                 "Codex CLI sessions sessions/**/*.jsonl, as turns",
                 Transcripts(codex.holds, codex.read)),
    IngestSource("gemini", "~/.gemini", gemini.read,
                 "Gemini CLI's saved chats tmp/<project>/chats/session-*.json(l), as turns",
                 Transcripts(gemini.holds, gemini.read)),
    IngestSource("chatgpt", None, chatgpt.read,
                 "a ChatGPT export's conversations.json: each chat's chosen branch, as turns"),
)}
