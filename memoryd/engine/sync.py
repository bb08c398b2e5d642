"""FileSync: the indexes brought in step with the files.

Hand edits reach the indexes through `sync_paths`, which compares each file's sha256
with the catalog's record; start-up reconciles every file, then the vectors in bulk,
then the topic graph. A file with partial or no front matter is completed and
rewritten. Each file is one commit of a UnitOfWork, so the next file's checks (a
duplicate id, a renamed file) see it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

import msgspec
import structlog

from memoryd.config import Config
from memoryd.engine.stores import Stores
from memoryd.engine.unit import UnitOfWork
from memoryd.graph import episodes
from memoryd.graph.store import GraphStore
from memoryd.graph.topics import TopicGraph
from memoryd.schema import (
    CATEGORIES,
    Memory,
    as_aware,
    content_hash,
    is_valid_id,
    is_valid_scope,
    new_id,
    utcnow,
)
from memoryd.store import frontmatter
from memoryd.store.files import file_sha

log = structlog.get_logger("memoryd.engine")

# Keys a file must carry; a file missing any of them is completed and rewritten.
_REQUIRED_KEYS = frozenset({"id", "content_hash", "kind", "phase", "category", "type", "scope",
                            "created_at", "updated_at", "version"})
_EVENT = {"added": "written", "updated": "updated", "deleted": "deleted"}


class FileSync:
    def __init__(self, stores: Stores, config: Config, graph: TopicGraph,
                 graph_store: GraphStore) -> None:
        self.stores = stores
        self.files = stores.files
        self.catalog = stores.catalog
        self.config = config
        self.graph = graph
        self.graph_store = graph_store

    def _index_file(self, uow: UnitOfWork, path: str, now: datetime) -> str | None:
        """Stage what brings the index in step with one file; returns what changed."""
        record = self.catalog.record_by_path(path)
        data = self.files.read_bytes(path)
        if data is None:
            if record is None:
                return None
            uow.unindex(path)
            return "deleted"
        sha = file_sha(data)
        if record is not None and record.file_sha == sha:
            return None
        try:
            text = data.decode("utf-8")
            parsed = frontmatter.parse(text, self.files.id_from_filename(path))
        except (UnicodeDecodeError, frontmatter.FrontMatterError) as exc:
            log.warning("store.unreadable_file", path=path, error=str(exc))
            if record is not None:
                uow.unindex(path)
            return None
        memory, rewrite = parsed.memory, bool(_REQUIRED_KEYS - parsed.present or parsed.dropped)
        for key, why in parsed.dropped.items():
            log.warning("store.ignored_value", path=path, key=key, error=why)
        rewrite |= self._complete(memory, path, record, now)
        if record is not None and record.id != memory.id:
            uow.unindex(path)
        if rewrite:
            uow.put(memory, path)
        else:
            uow.index(memory, path, sha)
        return "updated" if record is not None else "added"

    def _complete(self, memory: Memory, path: str, record: Any, now: datetime) -> bool:
        """Fill in and correct what a hand-written file lacks; True if anything changed.
        (Fields are only ever reassigned below, so a shallow copy is a fair "before".)"""
        before = msgspec.structs.replace(memory)
        taken = self.catalog.record_by_id(memory.id)
        if taken is not None and taken.path != path and not self.files.exists(taken.path):
            taken = None  # the file was renamed or moved by hand: its id moves with it
        if not is_valid_id(memory.id) or (taken is not None and taken.path != path):
            fallback = self.files.id_from_filename(path)
            other = self.catalog.record_by_id(fallback)
            valid = is_valid_id(fallback) and (other is None or other.path == path)
            memory.id = fallback if valid else new_id()
        for key, value in self.files.layout_facts(path).items():
            setattr(memory, key, value)
        if memory.category not in CATEGORIES:
            memory.category = "inbox"
        if memory.kind == "turn" and memory.type == "semantic":
            memory.type = "episodic"
        if not is_valid_scope(memory.scope):
            memory.scope = "global"
        memory.created_at = as_aware(memory.created_at)
        memory.updated_at = as_aware(memory.updated_at)
        fresh_hash = content_hash(memory.content)
        if memory.content_hash != fresh_hash:
            if memory.content_hash and record is not None:  # edited by hand
                memory.version += 1
                memory.updated_at = now
            memory.content_hash = fresh_hash
        if memory.phase == "inbox" and memory.expires_at is None and record is None:
            memory.expires_at = now + timedelta(seconds=self.config.storage.inbox_ttl)
        return memory != before

    def sync_paths_blocking(self, uow: UnitOfWork, paths: Iterable[str],
                            announce: bool = True) -> dict[str, list[str]]:
        """Each file in its own commit of `uow`; hand-edit events are raised on it
        (`announce`; not at start-up, before anybody can be subscribed)."""
        now = utcnow()
        changed: dict[str, list[str]] = {"added": [], "updated": [], "deleted": []}
        for path in paths:
            outcome = self._index_file(uow, path, now)
            uow.commit()
            if outcome:
                changed[outcome].append(path)
            if outcome and announce:
                uow.event(_EVENT[outcome], None, path=path, by="hand edit")
        return changed

    def _files_under(self, folders: Iterable[str]) -> list[str]:
        """Files now under these folders, and indexed files that were under them."""
        folders = [f.rstrip("/") for f in folders]
        prefixes = tuple(f"{f}/" for f in folders)
        if not prefixes:
            return []
        on_disk = list(self.files.iter_files(folders))
        indexed = [p for p in self.catalog.all_records() if p.startswith(prefixes)]
        return sorted({*on_disk, *indexed})

    async def sync_paths(self, paths: Iterable[str],
                         folders: Iterable[str] = ()) -> dict[str, list[str]]:
        """Re-read these files and folders (hand edits) and index what changed."""
        return await self.stores.change(
            lambda uow: self.sync_paths_blocking(uow, [*paths, *self._files_under(folders)]))

    def _reconcile_files(self, uow: UnitOfWork, announce: bool = True) -> dict[str, int]:
        """Make the catalog agree with every file (content hash per file)."""
        stale = self.files.remove_stale_temp_files()
        known = self.catalog.all_records()
        on_disk = set(self.files.iter_files())
        gone = [p for p in known if p not in on_disk]
        changed = self.sync_paths_blocking(uow, [*sorted(on_disk), *gone], announce)
        return {k: len(v) for k, v in changed.items()} | {"files": len(on_disk),
                                                          "stale_temp_files": stale}

    async def reconcile(self) -> dict[str, int]:
        return await self.stores.change(self._reconcile_files)

    async def startup(self, force_embed: bool = False,
                      abandon_on_cancel: bool = False) -> dict[str, int]:
        """Files -> catalog -> vectors -> topic graph: everything derived agrees with the
        files."""
        def run(uow: UnitOfWork) -> dict[str, int]:
            # The catalog first, file by file; then the vectors in bulk, reusing every
            # stored vector whose text is unchanged (a catalog rebuild re-embeds nothing).
            summary = self._reconcile_files(uow, announce=False)
            summary |= self.stores.hybrid.reconcile(self.catalog.all_memories(),
                                                    force=force_embed)
            self.reconcile_graph_blocking(self.graph)
            summary["episodes"] = len(self.graph.episodes)
            return summary

        return await self.stores.change(run, vectors=False, abandon=abandon_on_cancel)

    def reconcile_graph_blocking(self, graph: TopicGraph) -> dict[str, tuple[str, str]]:
        """Bring `graph` (the live one, or a plan) in step with the turn files; the live
        one is saved. Returns turn id -> (episode, topic) where a file lacks its topic."""
        missing = episodes.reconcile(graph, self.catalog.episode_turns(), self.catalog.load,
                                     self.stores.hybrid.embedder.embed)
        if graph is self.graph:
            graph.save(self.graph_store, utcnow().timestamp())
        return missing

    async def reconcile_graph(self, graph: TopicGraph) -> dict[str, tuple[str, str]]:
        return await self.stores.workers.write(self.reconcile_graph_blocking, graph)
