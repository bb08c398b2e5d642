"""Gemini CLI's saved chats, `tmp/<project>/chats/session-*.jsonl` under `~/.gemini`
(older versions wrote one `session-*.json` object, which the CLI converts to JSON Lines
when such a session is resumed).

A `.jsonl` file is a log of records, in order: the session's metadata (`sessionId`,
`projectHash`, `startTime`), messages (an `id`, a `type`, a `timestamp` and `content`;
a message written again under its id replaces the earlier one, as the CLI's own loader
does), `{"$rewindTo": id}` (that message and every later one are gone) and `{"$set":
{...}}` (metadata; with `messages`, a checkpoint that replaces them all). A `.json`
file holds `{sessionId, messages: [...]}`. Messages of type `user` and `gemini` are the
user's and the assistant's turns, their text parts their text; tool calls, thoughts,
`info`/`error`/`warning` messages, slash commands and the context the CLI or a hook
adds (`<session_context>`, `<hook_context>`) are left out, as the CLI leaves them out
when it resumes a session. A turn is known by its file and message id. Subagents' chats
(in a folder of their parent session) are not read."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec

from memoryd.ingest import jsonl, walk
from memoryd.ingest.document import Scan, Turn
from memoryd.schema import SESSION_PATTERN

_SESSION = re.compile(SESSION_PATTERN)
_ROLES = {"user": "user", "gemini": "assistant"}
_IGNORED = ("/", "?", "<session_context>", "<hook_context>")
_HOOK_CONTEXT = re.compile(r"<hook_context>.*?</hook_context>", re.DOTALL)


def holds(rel: str) -> bool:
    """Whether `rel` (within ~/.gemini) is a saved chat."""
    parts = rel.split("/")
    return (len(parts) == 4 and parts[0] == "tmp" and parts[2] == "chats"
            and parts[3].startswith("session-") and parts[3].endswith((".json", ".jsonl")))


def read(root: Path, only: str | None = None) -> Scan:
    return walk.transcripts(root, holds, only, _chat)


def _chat(scan: Scan, rel: str, text: str) -> None:
    if rel.endswith(".jsonl"):
        session, messages = _log(scan, rel, text)
    else:
        session, messages = _whole(scan, rel, text)
    if messages is None:
        return
    if session is None or not _SESSION.match(session):
        scan.fail(rel, f"session id {str(session)[:80]!r} is not a valid session name")
        return
    for message in messages.values():
        _turn(scan, rel, session, message)


def _log(scan: Scan, rel: str, text: str) -> tuple[str | None, dict[str, Any] | None]:
    """The session id and the messages (by id, in order) a chat's log leaves."""
    session: str | None = None
    messages: dict[str, Any] = {}
    for _, _, record in jsonl.objects(scan, rel, text):
        if not isinstance(record, dict):
            continue
        rewind, update = record.get("$rewindTo"), record.get("$set")
        if isinstance(rewind, str):
            ids = list(messages)
            kept = ids[:ids.index(rewind)] if rewind in messages else []
            messages = {i: messages[i] for i in kept}
        elif isinstance(update, dict):
            if isinstance(update.get("sessionId"), str):
                session = update["sessionId"]
            if isinstance(update.get("messages"), list):
                messages = _by_id(update["messages"])
        elif isinstance(record.get("id"), str):
            messages[record["id"]] = record
        elif isinstance(record.get("sessionId"), str):
            session = record["sessionId"]
    return session, messages


def _whole(scan: Scan, rel: str, text: str) -> tuple[str | None, dict[str, Any] | None]:
    try:
        record = msgspec.json.decode(text)
    except msgspec.DecodeError as exc:
        scan.fail(rel, f"not JSON: {exc}")
        return None, None
    if not isinstance(record, dict) or not isinstance(record.get("messages"), list):
        scan.fail(rel, "not a saved chat (no `messages` list)")
        return None, None
    session = record.get("sessionId")
    return session if isinstance(session, str) else None, _by_id(record["messages"])


def _by_id(messages: list[Any]) -> dict[str, Any]:
    return {m["id"]: m for m in messages if isinstance(m, dict) and isinstance(m.get("id"), str)}


def _turn(scan: Scan, rel: str, session: str, message: dict[str, Any]) -> None:
    role = _ROLES.get(str(message.get("type")))
    if role is None:
        return
    content = _text(message.get("content"))
    if role == "user":
        if content.startswith(_IGNORED):
            return
        content = _HOOK_CONTEXT.sub("", content).strip()
    if content:
        scan.turns.append(Turn(path=f"{rel}#{message['id']}", session=session, role=role,
                               content=content, created_at=jsonl.when(message.get("timestamp"))))


def _text(content: Any) -> str:
    """The text of a message's content: a string, a part, or a list of parts (their
    `text`, thoughts left out)."""
    if isinstance(content, str):
        return content.strip()
    parts = content if isinstance(content, list) else [content]
    texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
             and not p.get("thought")]
    return "\n\n".join(t.strip() for t in texts if t.strip())
