"""What callers ask the engine to store or change (tools, jobs)."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from memoryd.schema import Memory

# Where an inbox memory goes when it is upgraded without a category.
UPGRADE_CATEGORY = "knowledge"


@dataclass
class NewMemory:
    content: str
    category: str | None = None
    tags: list[str] | None = None
    scope: str | None = None
    source: str | None = None
    type: str | None = None
    importance: float | None = None
    session: str | None = None
    role: str | None = None
    created_at: datetime | None = None
    kind: str | None = None  # "reminder" (memory_remind); otherwise note or turn
    due_at: datetime | None = None
    pending: bool = False  # a turn from memory_remember: background work to do
    source_path: str | None = None  # ingested: the file within its source
    expires: bool = True  # False: an inbox memory without the inbox TTL (ingested notes)
    title: str | None = None  # None: derived (lang/titles.py)
    aliases: list[str] | None = None  # ingested: the other names a note's source gave it


@dataclass
class Changes:
    content: str | None = None
    title: str | None = None
    category: str | None = None
    tags: list[str] | None = None
    type: str | None = None
    importance: float | None = None


class Built(NamedTuple):
    """A new memory as a write builds it from its NewMemory (its secrets cut, its id
    given): made once, when the write is prepared or when it runs."""

    memory: Memory
    redacted: int  # secrets cut from its content and title


class Prepared(NamedTuple):
    """Writes built ahead of their turn (`Writes.prepare`): each one's Built (None where
    it is refused), and the embedding of their texts under way (None: nothing to
    embed)."""

    built: list[Built | None]
    embedding: Future[None] | None


class Written(NamedTuple):
    """What a write did: the memory stored, or an exact duplicate's original."""

    memory: Memory
    created: bool  # False: the same content was stored in that scope already
    redacted: int  # secrets cut from what was given


class Updated(NamedTuple):
    """What an update did: the memory as changed, and the secrets cut from what was
    given."""

    memory: Memory
    redacted: int
