"""Claude Code session transcripts, `projects/<project>/<session>.jsonl`: the user's
and the assistant's text become conversation turns of the transcript's session
(its `sessionId`). Tool calls, tool results, thinking, summaries and meta lines
(command caveats, local command output) are left out."""

from __future__ import annotations

import re
from pathlib import Path

from memoryd.ingest import jsonl, walk
from memoryd.ingest.document import Scan, Turn
from memoryd.schema import SESSION_PATTERN

_SESSION = re.compile(SESSION_PATTERN)
_NOISE = ("<command-name>", "<command-message>", "<local-command-stdout>",
          "<local-command-stderr>", "Caveat: The messages below")


def holds(rel: str) -> bool:
    """Whether `rel` (within ~/.claude) is a session transcript."""
    parts = rel.split("/")
    return len(parts) == 3 and parts[0] == "projects" and parts[2].endswith(".jsonl")


def read(root: Path, only: str | None = None) -> Scan:
    return walk.transcripts(root, holds, only, _transcript)


def _transcript(scan: Scan, rel: str, text: str) -> None:
    fallback = rel.rsplit("/", 1)[-1][:-6]
    for number, where, entry in jsonl.objects(scan, rel, text):
        if not isinstance(entry, dict) or entry.get("type") not in ("user", "assistant"):
            continue
        if entry.get("isMeta") or entry.get("isSidechain"):
            continue
        message = entry.get("message")
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant") or not isinstance(message, dict):
            scan.fail(where, "a user/assistant line without a message role")
            continue
        content = _text(message.get("content"))
        if not content or content.startswith(_NOISE):
            continue
        session = str(entry.get("sessionId") or fallback)
        if not _SESSION.match(session):
            scan.fail(where, f"session id {session[:80]!r} is not a valid session name")
            continue
        line_id = str(entry.get("uuid") or number)
        scan.turns.append(Turn(path=f"{rel}#{line_id}", session=session, role=role,
                               content=content, created_at=jsonl.when(entry.get("timestamp"))))


def _text(content: object) -> str:
    """The text of a message: a string, or the `text` blocks of a block list."""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        parts = [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"
                 and isinstance(b.get("text"), str)]
        return "\n\n".join(p.strip() for p in parts if p.strip())
    return ""

