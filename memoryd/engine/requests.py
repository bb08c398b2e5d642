"""What callers ask the engine to store or change (tools, jobs)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

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


@dataclass
class Changes:
    content: str | None = None
    title: str | None = None
    category: str | None = None
    tags: list[str] | None = None
    type: str | None = None
    importance: float | None = None
