"""UnitOfWork: the one way a change reaches the memories.

A change first stages what it does: memories to write (or move), files to index
as they are (hand edits), memories to trash, paths to unindex. `commit` then
applies what is staged once, in this order:

1. the files, durable: each written to a temp file, fsync'd and renamed, then
   each folder it touched fsync'd once (group commit);
2. the catalog, in one transaction;
3. the vectors (one model call for all new texts);
4. the access counts: hits folded into a rewritten file are consumed, a trashed
   memory's are forgotten.

The events it raised are published by the async caller once the worker thread
returns (events belong to the trio thread). A memory loaded twice in one unit
is the staged one the second time, so a change that rewrites one file twice (a
merge that repoints a peer's links twice) keeps both edits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memoryd.access_counts import AccessCounts
from memoryd.errors import NotFound
from memoryd.retrieval.hybrid import HybridIndex
from memoryd.schema import Memory
from memoryd.store import frontmatter
from memoryd.store.catalog import Catalog
from memoryd.store.files import MarkdownStore, file_sha

Event = tuple[str, dict[str, Any], str | None]  # method, params, scope (None: everyone)


@dataclass
class _Write:
    memory: Memory
    path: str  # where it goes
    origin: str  # where its file is now (the same for a new or unmoved memory)


@dataclass
class _Trash:
    memory: Memory
    path: str
    to: str
    rewrite: bool  # write the staged memory first (replaced_by), then move


class UnitOfWork:
    def __init__(self, files: MarkdownStore, catalog: Catalog, hybrid: HybridIndex,
                 access_counts: AccessCounts, vectors: bool = True) -> None:
        self.files = files
        self.catalog = catalog
        self.hybrid = hybrid
        self.access_counts = access_counts
        self.vectors = vectors  # False at start-up: vectors are reconciled in bulk after
        self.events: list[Event] = []
        self._reset()

    def _reset(self) -> None:
        self._writes: dict[str, _Write] = {}
        self._indexed: list[tuple[Memory, str, str]] = []
        self._trashed: dict[str, _Trash] = {}
        self._unindexed: list[str] = []
        self._folded: dict[str, int] = {}

    # -- staging -------------------------------------------------------------------
    def load(self, memory_id: str) -> tuple[Memory, str]:
        """The memory as its file says now (or as this unit staged it), and its path.
        Access hits still in the buffer are folded in (and consumed on commit)."""
        staged = self._writes.get(memory_id)
        if staged is not None:
            return staged.memory, staged.path
        if memory_id in self._trashed:
            raise NotFound(f"no memory with id {memory_id!r}")
        record = self.catalog.record_by_id(memory_id)
        if record is None:
            raise NotFound(f"no memory with id {memory_id!r}")
        data = self.files.read_bytes(record.path)
        if data is None:  # deleted by hand a moment ago; the watcher will catch up
            raise NotFound(f"no memory with id {memory_id!r} (its file is gone)")
        parsed = frontmatter.parse(data.decode("utf-8", errors="replace"), memory_id)
        memory = parsed.memory
        memory.id = memory_id
        pending = self.access_counts.pending(memory_id)
        if pending:
            memory.access_count += pending.count
            memory.last_accessed_at = pending.last  # type: ignore[assignment]
            self._folded[memory_id] = pending.count
        return memory, record.path

    def put(self, memory: Memory, path: str, origin: str | None = None) -> None:
        """Write `memory` durably at `path` (moving its file from `origin`)."""
        staged = self._writes.get(memory.id)
        start = staged.origin if staged is not None else origin or path
        self._writes[memory.id] = _Write(memory, path, start)

    def index(self, memory: Memory, path: str, sha: str) -> None:
        """The file at `path` is already durable as it is (a hand edit): index it."""
        self._indexed.append((memory, path, sha))

    def unindex(self, path: str) -> None:
        """The file at `path` is gone, or holds another memory now: drop its entries."""
        self._unindexed.append(path)

    def trash(self, memory: Memory, path: str, rewrite: bool = False) -> str:
        """Move the memory's file under trash/ (rewritten first with `rewrite`);
        returns where it goes."""
        staged = self._writes.pop(memory.id, None)
        origin = staged.origin if staged is not None else path
        taken = {t.to for t in self._trashed.values()}
        to = self.files.trash_path(origin, taken)
        self._trashed[memory.id] = _Trash(memory, origin, to, rewrite or staged is not None)
        return to

    def event(self, event: str, scope: str | None, **fields: Any) -> None:
        """A `notifications/memory` for subscribers who may see `scope` (None: all)."""
        self.events.append(("notifications/memory", {"event": event, **fields}, scope))

    # -- applying ------------------------------------------------------------------
    def commit(self) -> None:
        """Apply what is staged: files, catalog, vectors, access counts; once."""
        writes, indexed = list(self._writes.values()), self._indexed
        trashed, unindexed, folded = list(self._trashed.values()), self._unindexed, self._folded
        self._reset()
        if not (writes or indexed or trashed or unindexed):
            return
        files, catalog = self.files, self.catalog
        shas: dict[str, str] = {}
        in_place: list[str] = []
        for w in writes:
            data = frontmatter.render(w.memory)
            shas[w.memory.id] = file_sha(data)
            files.write_atomic(w.origin, data, sync_dir=False)
            if w.origin != w.path:
                files.move(w.origin, w.path)  # fsyncs both folders
            else:
                in_place.append(w.path)
        for t in trashed:
            if t.rewrite:
                files.write_atomic(t.path, frontmatter.render(t.memory), sync_dir=False)
            files.move(t.path, t.to)
        files.sync_dirs(in_place)  # durable before the catalog says so
        gone: list[Memory] = []
        if self.vectors and unindexed:
            records = [catalog.record_by_path(p) for p in unindexed]
            gone = catalog.load([r.id for r in records if r is not None])
        with catalog.transaction():
            for t in trashed:
                catalog.delete(t.memory.id)
            for path in unindexed:
                catalog.delete_path(path)
            for w in writes:
                catalog.upsert(w.memory, w.path, shas[w.memory.id])
            for memory, path, sha in indexed:
                catalog.upsert(memory, path, sha)
        if self.vectors:
            for memory in [*gone, *(t.memory for t in trashed)]:
                self.hybrid.delete(memory.id, memory.scope, catalog.load)
            fresh = [w.memory for w in writes] + [m for m, _, _ in indexed]
            if fresh:
                self.hybrid.upsert_many(fresh, catalog.load)
        for w in writes:
            self.access_counts.consumed(w.memory.id, folded.get(w.memory.id, 0))
        for t in trashed:
            self.access_counts.forget(t.memory.id)
            if t.memory.kind == "turn":
                files.remove_empty_dirs(t.path)
