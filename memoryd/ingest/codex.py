"""Codex CLI session files, `sessions/**/*.jsonl` under `~/.codex` (`rollout-<time>-
<id>.jsonl`, in folders by date): one JSON object a line. A `session_meta` line names
the session (`payload.id`); each `response_item` whose payload is a `message` of the
user or the assistant is a turn, its `input_text` / `output_text` parts its text. An
older file opens with `{"id": ..., "timestamp": ...}` and holds `message` lines
directly. Tool calls, their output, reasoning, the developer's and the system's
messages and the context Codex repeats in each session (`<user_instructions>`,
`<environment_context>`) are left out. A turn is known by its file and line: Codex
only appends to a session's file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from memoryd.ingest import jsonl, walk
from memoryd.ingest.document import Scan, Turn
from memoryd.schema import SESSION_PATTERN

_SESSION = re.compile(SESSION_PATTERN)
_ID_IN_NAME = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
                         r"\.jsonl$")
_CONTEXT = ("<user_instructions>", "<environment_context>", "<user_shell_command>",
            "# AGENTS.md instructions")


def holds(rel: str) -> bool:
    """Whether `rel` (within ~/.codex) is a session file."""
    return rel.startswith("sessions/") and rel.endswith(".jsonl")


def read(root: Path, only: str | None = None) -> Scan:
    return walk.transcripts(root, holds, only, _session)


def _session(scan: Scan, rel: str, text: str) -> None:
    named = _ID_IN_NAME.search(rel)
    session = named.group(1) if named else rel.rsplit("/", 1)[-1][:-6]
    for number, where, entry in jsonl.objects(scan, rel, text):
        if not isinstance(entry, dict):
            continue
        kind, payload = entry.get("type"), entry.get("payload")
        if kind == "session_meta" and isinstance(payload, dict) and payload.get("id"):
            session = str(payload["id"])
        elif number == 1 and "id" in entry and kind is None:  # the older first line
            session = str(entry["id"])
        message = payload if kind == "response_item" else entry if kind == "message" else None
        if not isinstance(message, dict) or message.get("type") != "message":
            continue
        role, content = message.get("role"), _text(message.get("content"))
        if role not in ("user", "assistant") or not content or content.startswith(_CONTEXT):
            continue
        if not _SESSION.match(session):
            scan.fail(where, f"session id {session[:80]!r} is not a valid session name")
            return
        scan.turns.append(Turn(path=f"{rel}#{number}", session=session, role=role,
                               content=content, created_at=jsonl.when(entry.get("timestamp"))))


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    parts = [b["text"] for b in content if isinstance(b, dict)
             and b.get("type") in ("input_text", "output_text", "text")
             and isinstance(b.get("text"), str)]
    return "\n\n".join(p.strip() for p in parts if p.strip())

