"""Links: bidirectional links between memories, and merges of duplicates (the
Engine's half that rewrites several files for one change)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from memoryd.access import Caller
from memoryd.errors import InvalidParams, NotFound
from memoryd.events import EventBus
from memoryd.retrieval.semantic import SemanticIndex
from memoryd.schema import Memory, clean_tags, utcnow
from memoryd.stats import AccessStats
from memoryd.store import frontmatter
from memoryd.store.files import MarkdownStore
from memoryd.store.keyword import KeywordIndex


class Links:
    """Mixed into Engine, whose state it uses."""

    files: MarkdownStore
    index: KeywordIndex
    semantic: SemanticIndex
    stats: AccessStats
    events: EventBus
    _writing: Callable[..., Awaitable[Any]]
    _load: Callable[[str], tuple[Memory, str]]
    _save: Callable[..., None]

    async def link(self, source: str, target: str, caller: Caller, *, linked: bool) -> Memory:
        """Add (or remove) the bidirectional link source <-> target."""
        if source == target:
            raise InvalidParams("target", "a memory cannot link to itself")

        def run() -> Memory:
            src, src_path = self._load(source)
            caller.check(src.scope)
            dst: Memory | None
            try:
                dst, dst_path = self._load(target)
                caller.check(dst.scope)
            except NotFound:
                if linked:
                    raise NotFound(f"no memory with id {target!r} (params.target)") from None
                dst, dst_path = None, ""
            for memory, path, other in ((src, src_path, target), (dst, dst_path, source)):
                if memory is None:
                    continue
                has = other in memory.links
                if has == linked:
                    continue
                memory.links = ([*memory.links, other] if linked
                                else [x for x in memory.links if x != other])
                memory.version += 1
                memory.updated_at = utcnow()
                self._save(memory, path)
            return src

        memory = await self._writing(run)
        self.events.publish("notifications/memory", {"event": "updated", "id": source},
                            memory.scope)
        return memory

    async def merge(self, keep_id: str, other_ids: list[str]) -> Memory:
        """Fold duplicates into `keep_id`: tags, links and access counts are unioned or
        summed into it; each other file goes to the trash with `replaced_by` set."""
        def run() -> tuple[Memory, list[tuple[str, str]]]:
            keep, keep_path = self._load(keep_id)
            gone: list[tuple[str, str]] = []
            for other_id in other_ids:
                try:
                    other, other_path = self._load(other_id)
                except NotFound:
                    continue
                keep.tags = clean_tags([*keep.tags, *other.tags])
                keep.access_count += other.access_count
                keep.replaces = [*keep.replaces, other_id]
                for peer in other.links:
                    if peer in (keep_id, *other_ids):
                        continue
                    if peer not in keep.links:
                        keep.links = [*keep.links, peer]
                    self._repoint_link(peer, other_id, keep_id)
                other.replaced_by = keep_id
                other.updated_at = utcnow()
                trash = self.files.trash_path(other_path)
                self.files.write_atomic(other_path, frontmatter.render(other))
                self.files.move(other_path, trash)
                with self.index.transaction():
                    self.index.delete(other_id)
                self.semantic.delete(other_id, other.scope, self.index.load)
                self.stats.forget(other_id)
                gone.append((other_id, other.scope))
            keep.links = [x for x in keep.links if x not in other_ids and x != keep_id]
            keep.version += 1
            keep.updated_at = utcnow()
            self._save(keep, keep_path)
            return keep, gone

        keep, gone = await self._writing(run)
        for other_id, scope in gone:
            self.events.publish("notifications/memory",
                                {"event": "deleted", "id": other_id, "replaced_by": keep_id},
                                scope)
        self.events.publish("notifications/memory", {"event": "updated", "id": keep_id},
                            keep.scope)
        return keep

    def _repoint_link(self, peer: str, old: str, new: str | None) -> None:
        """In `peer`'s links, `old` becomes `new` (None: the link is dropped)."""
        try:
            memory, path = self._load(peer)
        except NotFound:
            return
        links = [new if x == old else x for x in memory.links]
        links = list(dict.fromkeys(x for x in links if x is not None))
        if links != memory.links:
            memory.links = links
            memory.version += 1
            memory.updated_at = utcnow()
            self._save(memory, path)
