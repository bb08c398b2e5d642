"""FileSync: the indexes brought in step with the files (the Engine's half that reads
them back).

Hand edits reach the indexes through `sync_paths`, which compares each file's sha256
with the index's record; start-up reconciles every file, then the vectors in bulk, then
the topic graph. A file with partial or no front matter is completed and rewritten.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

import msgspec
import structlog

from memoryd.config import Config
from memoryd.events import EventBus
from memoryd.graph import episodes
from memoryd.graph.store import GraphStore
from memoryd.graph.topics import TopicGraph
from memoryd.models.embedder import Embedder
from memoryd.retrieval.semantic import SemanticIndex
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
from memoryd.store.files import MarkdownStore, file_sha
from memoryd.store.keyword import KeywordIndex

log = structlog.get_logger("memoryd.engine")

# Keys a file must carry; a file missing any of them is completed and rewritten.
_REQUIRED_KEYS = frozenset({"id", "content_hash", "kind", "phase", "category", "type", "scope",
                            "created_at", "updated_at", "version"})


class FileSync:
    """Mixed into Engine, whose state it uses."""

    config: Config
    files: MarkdownStore
    index: KeywordIndex
    semantic: SemanticIndex
    embedder: Embedder
    events: EventBus
    graph: TopicGraph
    graph_store: GraphStore
    _writing: Callable[..., Awaitable[Any]]

    def _index_file(self, path: str, now: datetime, semantic: bool = True) -> str | None:
        """Bring the index in step with one file; returns what changed, if anything.
        With `semantic=False` only the keyword index (start-up: vectors follow in bulk)."""
        record = self.index.record_by_path(path)
        data = self.files.read_bytes(path)
        if data is None:
            if record is None:
                return None
            self._unindex(path, semantic)
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
                self._unindex(path, semantic)
            return None
        memory, rewrite = parsed.memory, bool(_REQUIRED_KEYS - parsed.present or parsed.dropped)
        for key, why in parsed.dropped.items():
            log.warning("store.ignored_value", path=path, key=key, error=why)
        rewrite |= self._complete(memory, path, record, now)
        if rewrite:
            data = frontmatter.render(memory)
            self.files.write_atomic(path, data)
            sha = file_sha(data)
        if record is not None and record.id != memory.id:
            self._unindex(path, semantic)
        with self.index.transaction():
            self.index.upsert(memory, path, sha)
        if semantic:
            self.semantic.upsert(memory, self.index.load)
        return "updated" if record is not None else "added"

    def _unindex(self, path: str, semantic: bool = True) -> None:
        old = self.index.load([r.id for r in [self.index.record_by_path(path)] if r])
        with self.index.transaction():
            self.index.delete_path(path)
        if semantic:
            for memory in old:
                self.semantic.delete(memory.id, memory.scope, self.index.load)

    def _complete(self, memory: Memory, path: str, record: Any, now: datetime) -> bool:
        """Fill in and correct what a hand-written file lacks; True if anything changed.
        (Fields are only ever reassigned below, so a shallow copy is a fair "before".)"""
        before = msgspec.structs.replace(memory)
        taken = self.index.record_by_id(memory.id)
        if taken is not None and taken.path != path and not self.files.exists(taken.path):
            taken = None  # the file was renamed or moved by hand: its id moves with it
        if not is_valid_id(memory.id) or (taken is not None and taken.path != path):
            fallback = self.files.id_from_filename(path)
            other = self.index.record_by_id(fallback)
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

    def sync_paths_blocking(self, paths: Iterable[str],
                            semantic: bool = True) -> dict[str, list[str]]:
        now = utcnow()
        changed: dict[str, list[str]] = {"added": [], "updated": [], "deleted": []}
        for path in paths:
            outcome = self._index_file(path, now, semantic)
            if outcome:
                changed[outcome].append(path)
        return changed

    def _files_under(self, folders: Iterable[str]) -> list[str]:
        """Files now under these folders, and indexed files that were under them."""
        folders = [f.rstrip("/") for f in folders]
        prefixes = tuple(f"{f}/" for f in folders)
        if not prefixes:
            return []
        on_disk = list(self.files.iter_files(folders))
        indexed = [p for p in self.index.all_records() if p.startswith(prefixes)]
        return sorted({*on_disk, *indexed})

    async def sync_paths(self, paths: Iterable[str],
                         folders: Iterable[str] = ()) -> dict[str, list[str]]:
        """Re-read these files and folders (hand edits) and index what changed."""
        def run() -> dict[str, list[str]]:
            return self.sync_paths_blocking([*paths, *self._files_under(folders)])

        changed = await self._writing(run)
        for kind, paths_ in changed.items():
            for path in paths_:
                event = {"added": "written", "updated": "updated", "deleted": "deleted"}[kind]
                self.events.publish("notifications/memory",
                                    {"event": event, "path": path, "by": "hand edit"})
        return changed

    def reconcile_blocking(self, semantic: bool = True) -> dict[str, int]:
        """Make the index agree with every file (content hash per file)."""
        stale = self.files.remove_stale_temp_files()
        known = self.index.all_records()
        on_disk = set(self.files.iter_files())
        gone = [p for p in known if p not in on_disk]
        changed = self.sync_paths_blocking([*sorted(on_disk), *gone], semantic)
        return {k: len(v) for k, v in changed.items()} | {"files": len(on_disk),
                                                          "stale_temp_files": stale}

    async def reconcile(self) -> dict[str, int]:
        return await self._writing(self.reconcile_blocking)

    async def startup(self, force_embed: bool = False,
                      abandon_on_cancel: bool = False) -> dict[str, int]:
        """Files -> keyword index -> vectors: everything derived agrees with the files."""
        def run() -> dict[str, int]:
            # Keyword index first, file by file; then the vectors in bulk, reusing every
            # stored vector whose text is unchanged (a keyword-index rebuild re-embeds
            # nothing).
            summary = self.reconcile_blocking(semantic=False)
            summary |= self.semantic.reconcile(self.index.all_memories(), force=force_embed)
            self.reconcile_graph_blocking(self.graph)
            summary["episodes"] = len(self.graph.episodes)
            return summary

        return await self._writing(run, abandon=abandon_on_cancel)

    def reconcile_graph_blocking(self, graph: TopicGraph) -> dict[str, tuple[str, str]]:
        """Bring `graph` (the live one, or a plan) in step with the turn files; the live
        one is saved. Returns turn id -> (episode, topic) where a file lacks its topic."""
        missing = episodes.reconcile(graph, self.index.episode_turns(), self.index.load,
                                     self.embedder.embed)
        if graph is self.graph:
            graph.save(self.graph_store, utcnow().timestamp())
        return missing

    async def reconcile_graph(self, graph: TopicGraph) -> dict[str, tuple[str, str]]:
        return await self._writing(self.reconcile_graph_blocking, graph)
