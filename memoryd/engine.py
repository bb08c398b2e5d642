"""Engine: every change to the memories goes through here.

Files are the truth. A change is made durable in its file first, then the index
is updated, and only then does the caller get its answer, so a client reads its
own writes. Writes are serialised by one lock and run in a worker thread (fsync
and SQLite block); reads run in a reader thread. Keeping the indexes in step with
the files (hand edits, start-up) lives in file_sync.py; links and merges, which
rewrite several files for one change, in links.py.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import structlog
import trio

from memoryd.access import Caller
from memoryd.config import Config
from memoryd.errors import Conflict, InvalidParams, NotFound, RpcError
from memoryd.events import EventBus
from memoryd.file_sync import FileSync
from memoryd.graph.store import GraphStore
from memoryd.graph.topics import TopicGraph
from memoryd.links import Links
from memoryd.llm.client import ChatClient
from memoryd.models.embedder import Embedder
from memoryd.models.reranker import OnnxCrossEncoder, Reranker
from memoryd.retrieval.pipeline import SearchRequest, SearchResult, SmartSearch
from memoryd.retrieval.scoring import Recipe
from memoryd.retrieval.semantic import SemanticIndex
from memoryd.retrieval.vectors import VectorStore
from memoryd.schema import Memory, as_aware, clean_tags, content_hash, new_id, utcnow
from memoryd.stats import AccessStats
from memoryd.store import frontmatter
from memoryd.store.files import MarkdownStore, file_sha
from memoryd.store.keyword import Filters, KeywordIndex

log = structlog.get_logger("memoryd.engine")
T = TypeVar("T")

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


@dataclass
class Changes:
    content: str | None = None
    category: str | None = None
    tags: list[str] | None = None
    type: str | None = None
    importance: float | None = None


class Engine(FileSync, Links):
    def __init__(self, root: Path, config: Config) -> None:
        self.root = root
        self.config = config
        self.files = MarkdownStore(root)
        self.index = KeywordIndex(root / "index" / "keyword.sqlite")
        self.stats = AccessStats()
        self.events = EventBus()
        self.embedder = Embedder(threads=config.embedder.threads,
                                 batch_size=config.embedder.batch_size,
                                 variant=config.embedder.variant,
                                 cache_dir=root / "index" / "models")
        self.semantic = SemanticIndex(
            self.embedder, VectorStore(root / "index" / "chroma", config.vectors.url))
        g = config.graph
        self.graph = TopicGraph(g, self.embedder.dim)
        self.graph_store = GraphStore(root / "index" / "graph.sqlite", self.embedder.model_id)
        self.graph.load(self.graph_store)
        r = config.retrieval
        self.reranker: Reranker | None = (
            OnnxCrossEncoder(Path(config.reranker.model_dir).expanduser(),
                             threads=config.embedder.threads)
            if config.reranker.model_dir else None)
        self.searcher = SmartSearch(
            self.semantic,
            Recipe(k1=r.bm25_k1, b=r.bm25_b, neighbour_field=r.neighbour_field,
                   coverage_power=r.coverage_power, lexical_weight=r.lexical_weight,
                   context_weight=r.context_weight, neighbour_credit=r.neighbour_credit,
                   session_boost=r.session_boost),
            exact_limit=r.exact_limit, candidate_factor=r.candidate_factor,
            reranker=self.reranker, fetch=self.index.get_many,
            graph=self.graph if g.expand else None)
        self.llm = ChatClient(config.llm) if config.llm.url else None
        self._write_lock = trio.Lock()
        self._folded: dict[str, int] = {}  # hits `_load` folded in, per id (writer thread)
        self._read_limiter = trio.CapacityLimiter(1)
        self._closed = False

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.graph.save(self.graph_store, utcnow().timestamp())
        self.graph_store.close()
        self.index.close()
        self.semantic.vectors.close()

    # -- thread plumbing -------------------------------------------------------
    async def _writing(self, fn: Callable[..., T], *args: Any, abandon: bool = False) -> T:
        # Not abandoned on cancel (unless asked): a started write always finishes.
        async with self._write_lock:
            return await trio.to_thread.run_sync(fn, *args, abandon_on_cancel=abandon)

    async def _reading(self, fn: Callable[..., T], *args: Any) -> T:
        return await trio.to_thread.run_sync(fn, *args, limiter=self._read_limiter)

    # -- file <-> index --------------------------------------------------------
    def _load(self, memory_id: str) -> tuple[Memory, str]:
        """The memory as its file says now (the truth), and its path."""
        record = self.index.record_by_id(memory_id)
        if record is None:
            raise NotFound(f"no memory with id {memory_id!r}")
        data = self.files.read_bytes(record.path)
        if data is None:  # deleted by hand a moment ago; the watcher will catch up
            raise NotFound(f"no memory with id {memory_id!r} (its file is gone)")
        parsed = frontmatter.parse(data.decode("utf-8", errors="replace"), memory_id)
        memory = parsed.memory
        memory.id = memory_id
        pending = self.stats.pending(memory_id)
        if pending:
            memory.access_count += pending.count
            memory.last_accessed_at = pending.last  # type: ignore[assignment]
            self._folded[memory_id] = pending.count
        return memory, record.path

    def _save(self, memory: Memory, path: str, old_path: str | None = None) -> None:
        """Durably write `memory` at `path` (moving it from `old_path`), then index it."""
        data = frontmatter.render(memory)
        if old_path is not None and old_path != path:
            self.files.write_atomic(old_path, data)
            self.files.move(old_path, path)
        else:
            self.files.write_atomic(path, data)
        with self.index.transaction():
            self.index.upsert(memory, path, file_sha(data))
        self.semantic.upsert(memory, self.index.load)
        self.stats.consumed(memory.id, self._folded.pop(memory.id, 0))

    # -- writes ----------------------------------------------------------------
    async def write(self, new: NewMemory, caller: Caller) -> tuple[Memory, bool]:
        """Store a new memory; an exact duplicate in the same scope returns the original."""
        (result,) = await self.write_many([new], caller)
        if isinstance(result, RpcError):
            raise result
        return result

    async def write_many(self, news: list[NewMemory], caller: Caller
                         ) -> list[tuple[Memory, bool] | RpcError]:
        """Group commit: many new memories in one writer pass (files fsync'd, then one
        index transaction and one model call). Each item succeeds or fails alone."""
        results: list[tuple[Memory, bool] | RpcError | None] = []
        built: list[Memory] = []
        for new in news:
            try:
                scope = new.scope or caller.default_scope
                caller.check(scope)
                built.append(self._build(new, scope))
                results.append(None)
            except RpcError as exc:
                results.append(exc)
        stored = iter(await self._writing(self._write_blocking, built) if built else [])
        out: list[tuple[Memory, bool] | RpcError] = []
        for slot in results:
            if slot is None:
                memory, created = next(stored)
                if created:
                    self.events.publish("notifications/memory",
                                        {"event": "written", "id": memory.id}, memory.scope)
                out.append((memory, created))
            else:
                out.append(slot)
        return out

    def _build(self, new: NewMemory, scope: str) -> Memory:
        content = new.content.strip()
        if not content:
            raise InvalidParams("content", "must not be empty or only white space")
        now = utcnow()
        created = as_aware(new.created_at) if new.created_at else now
        is_turn = new.role is not None
        if is_turn and not new.session:
            raise InvalidParams("session", "a turn (a write with `role`) needs its session")
        is_reminder = new.kind == "reminder"
        category = "reminders" if is_reminder else new.category or "inbox"
        organized = category != "inbox"
        return Memory(
            id=new_id(), content=content, content_hash=content_hash(content),
            kind="turn" if is_turn else "reminder" if is_reminder else "note",
            due_at=as_aware(new.due_at) if new.due_at else None,
            phase="organized" if organized or is_turn else "inbox",
            category=category,
            type=new.type or ("episodic" if is_turn else "working" if is_reminder
                              else "semantic"),
            scope=scope, session=new.session, role=new.role,  # type: ignore[arg-type]
            tags=clean_tags(new.tags or []), source=new.source or "",
            importance=0.5 if new.importance is None else new.importance,
            created_at=created, updated_at=now,
            expires_at=None if organized or is_turn else now + timedelta(
                seconds=self.config.storage.inbox_ttl),
        )

    def _write_blocking(self, memories: list[Memory]) -> list[tuple[Memory, bool]]:
        results: list[tuple[Memory, bool]] = []
        fresh: list[tuple[Memory, str, str]] = []
        batch: dict[tuple[str, str, str], Memory] = {}
        for memory in memories:
            if memory.kind != "turn":
                key = (memory.content_hash, memory.scope, memory.kind)
                if key in batch:
                    results.append((batch[key], False))
                    continue
                duplicate = self.index.find_duplicate(memory.content_hash, memory.scope,
                                                      memory.kind)
                if duplicate is not None:
                    with contextlib.suppress(NotFound):
                        results.append((self._load(duplicate)[0], False))
                        continue
                batch[key] = memory
            path = self.files.relpath_for(memory)
            data = frontmatter.render(memory)
            self.files.write_atomic(path, data, sync_dir=False)
            fresh.append((memory, path, file_sha(data)))
            results.append((memory, True))
        self.files.sync_dirs(path for _, path, _ in fresh)  # durable before any reply
        with self.index.transaction():
            for memory, path, sha in fresh:
                self.index.upsert(memory, path, sha)
        self.semantic.upsert_many([m for m, _, _ in fresh], self.index.load)
        return results

    async def update(self, memory_id: str, changes: Changes, caller: Caller,
                     expected_version: int | None = None) -> Memory:
        def change(memory: Memory) -> None:
            if expected_version is not None and expected_version != memory.version:
                raise Conflict(f"memory {memory_id} is at version {memory.version}, not "
                               f"{expected_version}: re-read it and apply your change again")
            if changes.content is not None:
                content = changes.content.strip()
                if not content:
                    raise InvalidParams("content", "must not be empty or only white space")
                memory.content, memory.content_hash = content, content_hash(content)
            if changes.category is not None and memory.kind != "turn":
                memory.category = changes.category  # type: ignore[assignment]
                memory.phase = "inbox" if changes.category == "inbox" else "organized"
                if memory.phase == "organized":
                    memory.expires_at = None
            if changes.tags is not None:
                memory.tags = clean_tags(changes.tags)
            if changes.type is not None:
                memory.type = changes.type  # type: ignore[assignment]
            if changes.importance is not None:
                memory.importance = changes.importance

        return await self._modify(memory_id, caller, change, "updated")

    async def _modify(self, memory_id: str, caller: Caller,
                      change: Callable[[Memory], None], event: str) -> Memory:
        def run() -> Memory:
            memory, path = self._load(memory_id)
            caller.check(memory.scope)
            change(memory)
            memory.version += 1
            memory.updated_at = utcnow()
            self._save(memory, self.files.relpath_for(memory), old_path=path)
            return memory

        memory = await self._writing(run)
        self.events.publish("notifications/memory", {"event": event, "id": memory_id},
                            memory.scope)
        return memory

    async def delete(self, memory_id: str, caller: Caller) -> str:
        def run() -> tuple[str, str]:
            memory, path = self._load(memory_id)
            caller.check(memory.scope)
            for peer in memory.links:
                self._repoint_link(peer, memory_id, None)
            trash = self.files.trash_path(path)
            self.files.move(path, trash)
            with self.index.transaction():
                self.index.delete(memory_id)
            self.semantic.delete(memory_id, memory.scope, self.index.load)
            self.stats.forget(memory_id)
            if memory.kind == "turn":
                self.files.remove_empty_dirs(path)
            return trash, memory.scope

        trash, scope = await self._writing(run)
        self.events.publish("notifications/memory", {"event": "deleted", "id": memory_id}, scope)
        return trash

    async def assign_episodes(self, assigned: dict[str, tuple[str, str]]) -> int:
        """Record each turn's episode and topic in its file (decay-sweep), as the access
        counts are: no new version. Turns deleted meanwhile are skipped."""
        def run() -> int:
            saved: list[tuple[Memory, str, str]] = []
            for turn_id, (episode, topic) in assigned.items():
                try:
                    memory, path = self._load(turn_id)
                except NotFound:
                    continue
                memory.episode, memory.topic = episode, topic
                data = frontmatter.render(memory)
                self.files.write_atomic(path, data, sync_dir=False)
                saved.append((memory, path, file_sha(data)))
            self.files.sync_dirs(path for _, path, _ in saved)
            with self.index.transaction():
                for memory, path, sha in saved:
                    self.index.upsert(memory, path, sha)
            self.semantic.upsert_many([m for m, _, _ in saved], self.index.load)
            for memory, _, _ in saved:
                self.stats.consumed(memory.id, self._folded.pop(memory.id, 0))
            return len(saved)

        return await self._writing(run)

    async def mark_notified(self, memory_id: str, when: datetime) -> Memory:
        """A reminder was announced: record it in its file so it is announced once."""
        def change(memory: Memory) -> None:
            memory.notified_at = when

        return await self._modify(memory_id, Caller(), change, "updated")

    async def tag(self, memory_id: str, add: list[str], remove: list[str],
                  caller: Caller) -> Memory:
        dropping = set(clean_tags(remove))

        def change(memory: Memory) -> None:
            tags = [t for t in memory.tags if t not in dropping]
            memory.tags = clean_tags(tags + [t for t in add if t not in dropping])

        return await self._modify(memory_id, caller, change, "updated")

    async def upgrade(self, memory_id: str, category: str | None, caller: Caller) -> Memory:
        def change(memory: Memory) -> None:
            if memory.phase != "inbox":
                raise InvalidParams("id", f"memory {memory_id} is already organized "
                                    f"(category {memory.category})")
            memory.category = category or UPGRADE_CATEGORY  # type: ignore[assignment]
            memory.phase = "organized"
            memory.expires_at = None

        if category == "inbox":
            raise InvalidParams("category", "upgrade moves a memory out of the inbox; "
                                "name one of the other categories")
        return await self._modify(memory_id, caller, change, "updated")

    # -- reads -----------------------------------------------------------------
    async def read(self, memory_id: str, caller: Caller, *, count_access: bool = True) -> Memory:
        memory = self.index.get(memory_id)
        if memory is None:
            raise NotFound(f"no memory with id {memory_id!r}")
        caller.check(memory.scope)
        if count_access:
            self.stats.hit(memory_id)
        return self.stats.overlay(memory)

    async def list(self, filters: Filters, limit: int, offset: int) -> tuple[list[Memory], int]:
        memories, total = await self._reading(self.index.list, filters, limit, offset)
        return [self.stats.overlay(m) for m in memories], total

    async def search(self, query: str, filters: Filters, limit: int,
                     offset: int) -> tuple[list[Memory], int]:
        memories, total = await self._reading(self.index.search, query, filters, limit, offset)
        return [self.stats.overlay(m) for m in memories], total

    async def backlinks(self, memory_id: str, caller: Caller) -> list[Memory]:
        await self.read(memory_id, caller, count_access=False)
        ids = await self._reading(self.index.backlinks, memory_id)
        memories = await self._reading(self.index.get_many, ids)
        return [self.stats.overlay(m) for m in memories if caller.can_see(m.scope)]

    async def smart_search(self, req: SearchRequest, every_candidate: bool = False
                           ) -> tuple[SearchResult, dict[str, Memory]]:
        """Rank, then load the kept memories (or every candidate, for explain); access
        counts go to the stats buffer."""
        def run() -> tuple[SearchResult, dict[str, Memory]]:
            result = self.searcher.run(req)
            shown = result.candidates if every_candidate else result.selected
            ids = [c.id for c in shown]
            return result, {m.id: m for m in self.index.get_many(ids)}

        result, memories = await self._reading(run)
        for c in result.selected:
            self.stats.hit(c.id)
        if not every_candidate and result.graph is not None:
            self.graph.co_occur(result.graph.co_occurring)  # in memory; saved with stats
        return result, {k: self.stats.overlay(m) for k, m in memories.items()}

    async def session_summary(self, session: str) -> str | None:
        """The rolling summary of a session (sessions/<session>/summary.md), if any."""
        def run() -> str | None:
            data = self.files.read_bytes(f"sessions/{session}/summary.md")
            if data is None:
                return None
            try:
                return frontmatter.parse(data.decode("utf-8", "replace"), session).memory.content
            except frontmatter.FrontMatterError:
                return None

        return await self._reading(run)

    async def peek(self, ids: list[str]) -> list[Memory]:
        """Memories by id, as the index has them; no access is counted."""
        return await self._reading(self.index.get_many, ids)

    async def unswept_turns(self) -> list[Memory]:
        """Turns in no episode yet (with pending access counts), by scope, session, time."""
        return [self.stats.overlay(m) for m in await self._reading(self.index.unswept_turns)]

    async def due_reminders(self, now: datetime) -> list[Memory]:
        return await self._reading(self.index.due_reminders, now.timestamp())

    async def announced_reminders(self) -> list[Memory]:
        return await self._reading(self.index.announced_reminders)

    async def notes(self) -> list[Memory]:
        """A snapshot of every memory but conversation turns, with pending access counts."""
        return [self.stats.overlay(m) for m in await self._reading(self.index.notes)]

    async def counts(self) -> dict[str, Any]:
        return await self._reading(self.index.counts)

    # -- access statistics -----------------------------------------------------
    async def flush_stats(self) -> int:
        """Write buffered access counts into their files, in one batch (and the graph's
        new co-occurrence edges into graph.sqlite)."""
        await self._writing(self.graph.save, self.graph_store, utcnow().timestamp())
        if not self.stats.dirty:
            return 0

        def run() -> int:
            flushed = 0
            for memory_id in list(self.stats.dirty):
                try:
                    memory, path = self._load(memory_id)
                except NotFound:
                    self.stats.forget(memory_id)
                    continue
                self._save(memory, path)
                flushed += 1
            return flushed

        flushed = await self._writing(run)
        log.debug("stats.flushed", memories=flushed)
        return flushed
