"""A ChatGPT data export's `conversations.json` (the folder the export's zip was
unpacked into): a list of conversations, each a tree of messages (`mapping`: node ->
its message, parent and children) whose chosen branch ends at `current_node`. That
branch, root first, becomes the turns of a session named by the conversation's id;
the user's and the assistant's text only (system and tool messages, hidden ones and
non-text parts are left out), each known by `<conversation id>:<node id>`."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from memoryd.ingest import walk
from memoryd.ingest.document import Scan, Turn
from memoryd.schema import SESSION_PATTERN

FILE = "conversations.json"
# An export holds every chat of an account in this one file: tens of megabytes.
LIMIT = 512 * 1024 * 1024
_SESSION = re.compile(SESSION_PATTERN)


def read(root: Path) -> Scan:
    scan = Scan()
    for rel, data in walk.files(root, scan, lambda rel: rel == FILE, limit=LIMIT):
        try:
            conversations = msgspec.json.decode(data)
        except msgspec.DecodeError as exc:
            scan.fail(rel, f"not JSON: {exc}")
            continue
        if not isinstance(conversations, list):
            scan.fail(rel, "not a list of conversations")
            continue
        for n, conversation in enumerate(conversations):
            _conversation(scan, rel, n, conversation)
    return scan


def _conversation(scan: Scan, rel: str, n: int, conversation: object) -> None:
    where = f"{rel}[{n}]"
    if not isinstance(conversation, dict) or not isinstance(conversation.get("mapping"), dict):
        scan.fail(where, "a conversation without its mapping of messages")
        return
    session = str(conversation.get("conversation_id") or conversation.get("id") or "")
    if not _SESSION.match(session):
        scan.fail(where, f"conversation id {session[:80]!r} is not a valid session name")
        return
    mapping: dict[str, Any] = conversation["mapping"]
    branch: list[tuple[str, dict[str, Any]]] = []  # (node id, its message)
    node_id = conversation.get("current_node")
    seen: set[str] = set()
    while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
        seen.add(node_id)  # a cycle would never end: each node once
        node = mapping[node_id]
        if not isinstance(node, dict):
            break
        if isinstance(node.get("message"), dict):
            branch.append((node_id, node["message"]))
        node_id = node.get("parent")
    if not branch:
        scan.skip(where, "no message on the chosen branch")
        return
    for node, message in reversed(branch):
        turn = _turn(message)
        if turn is not None:
            scan.turns.append(Turn(path=f"{rel}#{session}:{node}", session=session,
                                   role=turn[0], content=turn[1], created_at=turn[2]))


def _turn(message: dict[str, Any]) -> tuple[str, str, datetime | None] | None:
    """(role, text, time) of a user's or the assistant's visible text."""
    author = message.get("author")
    role = author.get("role") if isinstance(author, dict) else None
    metadata = message.get("metadata")
    hidden = isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation")
    content = message.get("content")
    if role not in ("user", "assistant") or hidden or not isinstance(content, dict):
        return None
    if content.get("content_type") not in ("text", "multimodal_text"):
        return None
    parts = content.get("parts")
    text = "\n\n".join(p.strip() for p in parts if isinstance(p, str) and p.strip()) \
        if isinstance(parts, list) else ""
    if not text:
        return None
    stamp = message.get("create_time")
    when = (datetime.fromtimestamp(stamp, UTC)
            if isinstance(stamp, int | float) and 0 < stamp < 1e11 else None)
    return role, text, when
