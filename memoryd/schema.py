"""The memory: one definition of its fields, enums, id rules and content hash.

The same Struct is the YAML front matter on disk (plus the body as `content`)
and the object a tool returns.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
import uuid
from datetime import UTC, datetime
from typing import Any, Literal, get_args

import msgspec

Kind = Literal["note", "fact", "turn", "summary", "reminder"]
Phase = Literal["inbox", "organized"]
Category = Literal[
    "soul", "character", "people", "project", "date", "knowledge", "feedback",
    "preferences", "decisions", "lessons", "habits", "skills", "inbox", "reminders",
]
MemoryType = Literal["episodic", "semantic", "procedural", "working"]
Role = Literal["user", "assistant"]

CATEGORIES: tuple[str, ...] = get_args(Category)
KINDS: tuple[str, ...] = get_args(Kind)
TYPES: tuple[str, ...] = get_args(MemoryType)

# An id or a session name becomes part of a path: letters, digits, `.`, `_`, `-`,
# starting with a letter or digit (so never `.` / `..`), at most 128 characters.
# `(?!\n)$`: Python's `$` also matches before a final newline; ECMAScript's does not.
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}(?!\n)$"
SCOPE_PATTERN = r"^(global|(agent|user):[A-Za-z0-9][A-Za-z0-9._-]{0,63})(?!\n)$"
# A session names a folder (sessions/<session>/): like an id, plus ':' ("conv-26:3").
SESSION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}(?!\n)$"
_ID_RE = re.compile(ID_PATTERN)
_SCOPE_RE = re.compile(SCOPE_PATTERN)

GLOBAL_SCOPE = "global"


def is_valid_id(value: str) -> bool:
    return bool(_ID_RE.match(value)) and ".." not in value


def is_valid_scope(value: str) -> bool:
    return bool(_SCOPE_RE.match(value))


def new_id() -> str:
    return str(uuid.uuid4())


def normalise_content(content: str) -> str:
    return unicodedata.normalize("NFC", content).strip()


def content_hash(content: str) -> str:
    return hashlib.sha256(normalise_content(content).encode("utf-8")).hexdigest()


def clean_tags(tags: list[str]) -> list[str]:
    """Tags stripped, empty ones dropped, duplicates dropped (first one kept)."""
    seen: dict[str, None] = {}
    for tag in tags:
        tag = tag.strip()
        if tag:
            seen.setdefault(tag, None)
    return list(seen)


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_aware(value: datetime) -> datetime:
    """Naive datetimes (hand-written files, clients) are taken as UTC."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


class Memory(msgspec.Struct, kw_only=True):
    """A memory's front matter plus its content. Field order is the file's key order."""

    id: str
    content_hash: str = ""
    kind: Kind = "note"
    phase: Phase = "inbox"
    category: Category = "inbox"
    type: MemoryType = "semantic"
    scope: str = GLOBAL_SCOPE
    session: str | None = None
    role: Role | None = None
    # Turns only, set by the decay-sweep job: the long-term episode (a user turn and
    # its reply) this turn belongs to, and that episode's topic node in the graph.
    episode: str | None = None
    topic: str | None = None
    tags: list[str] = msgspec.field(default_factory=list)
    source: str = ""
    importance: float = 0.5
    created_at: datetime = msgspec.field(default_factory=utcnow)
    updated_at: datetime = msgspec.field(default_factory=utcnow)
    expires_at: datetime | None = None
    due_at: datetime | None = None
    notified_at: datetime | None = None  # reminders: when the notify job announced it
    access_count: int = 0
    last_accessed_at: datetime | None = None
    links: list[str] = msgspec.field(default_factory=list)
    replaces: list[str] = msgspec.field(default_factory=list)
    replaced_by: str | None = None
    version: int = 1
    content: str = ""
    # Front-matter keys a user wrote that we do not know; kept on every rewrite.
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


FRONT_MATTER_FIELDS: tuple[str, ...] = tuple(
    f for f in Memory.__struct_fields__ if f not in ("content", "extra")
)


def to_wire(memory: Memory) -> dict[str, Any]:
    """A memory as a tool returns it: front-matter fields plus `content`."""
    wire = msgspec.to_builtins(memory)
    if not wire.get("extra"):
        wire.pop("extra", None)
    return wire
