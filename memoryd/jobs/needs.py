"""What the background jobs need of the engine, and nothing more: the interface they
are written against, which the engine meets (the scheduler hands it over as one, so
the type checker holds the engine to it) and a test's small fake can stand in for.

A job that needs more adds it here, where the engine's own method is named."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from memoryd.config import Config
from memoryd.graph.topics import TopicGraph
from memoryd.schema import Memory
from memoryd.scopes import Caller

if TYPE_CHECKING:
    from memoryd.engine.requests import NewMemory
    from memoryd.ports import ChatModel, Embedder

Located = list[tuple[str, str]]  # (id, path) of each memory found


class JobReads(Protocol):
    async def notes(self) -> list[Memory]: ...

    async def vectors(self, ids: list[str]) -> dict[str, np.ndarray]: ...

    async def peek(self, ids: list[str]) -> list[Memory]: ...

    async def unswept_turns(self) -> list[Memory]: ...

    async def expired_inbox(self, now: datetime) -> Located: ...

    async def never_accessed_organized(self, created_before: datetime) -> Located: ...

    async def inbox_access_counts(self) -> dict[str, tuple[str, int]]: ...

    async def due_reminders(self, now: datetime) -> list[Memory]: ...

    async def announced_reminders(self) -> list[Memory]: ...


class JobWrites(Protocol):
    async def write(self, new: NewMemory, caller: Caller) -> tuple[Memory, bool]: ...

    async def delete(self, memory_id: str, caller: Caller) -> str: ...

    async def upgrade(self, memory_id: str, category: str | None,
                      caller: Caller) -> Memory: ...

    async def mark_notified(self, memory_id: str, when: datetime) -> Memory: ...

    async def assign_episodes(self, assigned: dict[str, tuple[str, str]]) -> int: ...


class JobLinks(Protocol):
    async def link(self, source: str, target: str, caller: Caller, *,
                   linked: bool) -> Memory: ...

    async def merge(self, keep_id: str, other_ids: list[str]) -> Memory: ...


class JobUpkeep(Protocol):
    async def compress(self, threshold: int, dry_run: bool) -> list[dict[str, Any]]: ...


class JobSync(Protocol):
    async def reconcile_graph(self, graph: TopicGraph) -> dict[str, tuple[str, str]]: ...


class JobEngine(Protocol):
    @property
    def config(self) -> Config: ...

    @property
    def reads(self) -> JobReads: ...

    @property
    def writes(self) -> JobWrites: ...

    @property
    def links(self) -> JobLinks: ...

    @property
    def upkeep(self) -> JobUpkeep: ...

    @property
    def sync(self) -> JobSync: ...

    @property
    def graph(self) -> TopicGraph: ...  # the live topic graph (the sweep plans a copy)

    @property
    def embedder(self) -> Embedder: ...

    @property
    def llm(self) -> ChatModel | None: ...

    def path_of(self, memory: Memory, current: str | None = None) -> str: ...

    def trash_path(self, path: str, memory_id: str) -> str: ...

    def has_file(self, path: str) -> bool: ...

    def announce(self, method: str, params: dict[str, Any], scope: str) -> None: ...

    async def write_generated(self, path: str, body: bytes) -> None: ...

    async def sync_remote(self, dry_run: bool = False, scheduled: bool = False
                          ) -> dict[str, Any]: ...

    async def save_graph(self, graph: TopicGraph, at: float) -> None: ...
