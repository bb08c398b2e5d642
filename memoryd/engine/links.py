"""Links: bidirectional links between memories, and merges of duplicates — changes
that rewrite several files at once, each as one UnitOfWork."""

from __future__ import annotations

from memoryd.engine.stores import Stores
from memoryd.engine.unit import UnitOfWork
from memoryd.errors import InvalidFile, InvalidParams, NotFound
from memoryd.ingest.markup import wikilinks
from memoryd.schema import MAX_LINKS, Memory, clean_tags, is_valid_id, utcnow
from memoryd.scopes import Caller, may_link


def _bump(memory: Memory) -> None:
    memory.version += 1
    memory.updated_at = utcnow()


def repoint_link(uow: UnitOfWork, peer: str, old: str, new: str | None) -> None:
    """In `peer`'s links, `old` becomes `new` (None: the link is dropped)."""
    try:
        memory, path = uow.load(peer)
    except NotFound:
        return
    swapped = [new if x == old else x for x in memory.links]
    links = list(dict.fromkeys(x for x in swapped if x is not None))
    if links != memory.links:
        memory.links = links
        _bump(memory)
        uow.put(memory, path)


def link_typed(uow: UnitOfWork, memory: Memory) -> bool:
    """A `[[name]]` typed in a note's text (in an editor, or through a tool: by file
    name or by the end of its path, as Obsidian makes them, or an id) to a memory not
    linked yet becomes a link both ways; whether any did. A name no file has, or one
    of a memory the scopes keep apart (scopes.may_link), is left as text."""
    added = False
    for name in wikilinks(memory.content):
        target = _named(uow, name.removesuffix(".md"))
        if target is None or target == memory.id or target in memory.links:
            continue
        try:
            other, other_path = uow.load(target)
        except (NotFound, InvalidFile):
            continue
        if not may_link(memory.scope, other.scope):
            continue  # another agent's private memory: left as text, never named
        if len(memory.links) >= MAX_LINKS or len(other.links) >= MAX_LINKS:
            continue
        memory.links = [*memory.links, target]
        if memory.id not in other.links:
            other.links = [*other.links, memory.id]
            other.version += 1
            uow.put(other, other_path)
        added = True
    return added


def _named(uow: UnitOfWork, name: str) -> str | None:
    """The memory a link's name means: a file under categories/ by its name or the end
    of its path, as Obsidian resolves it (catalog.record_by_link), or an id."""
    if not name or "\x00" in name:
        return None
    record = uow.catalog.writer.record_by_link(name)
    if record is not None:
        return record.id
    record = uow.catalog.writer.record_by_id(name) if is_valid_id(name) else None
    return record.id if record is not None else None


class Links:
    def __init__(self, stores: Stores) -> None:
        self.stores = stores

    async def link(self, source: str, target: str, caller: Caller, *, linked: bool) -> Memory:
        """Add (or remove) the bidirectional link source <-> target."""
        if source == target:
            raise InvalidParams("target", "a memory cannot link to itself")

        def run(uow: UnitOfWork) -> Memory:
            src, src_path = uow.load(source)
            caller.check(src.scope)
            dst: Memory | None
            try:
                dst, dst_path = uow.load(target)
                caller.check(dst.scope)
            except NotFound:
                if linked:
                    raise NotFound(f"no memory with id {target!r} (params.target)") from None
                dst, dst_path = None, ""
            for memory, path, other in ((src, src_path, target), (dst, dst_path, source)):
                if memory is None or (other in memory.links) == linked:
                    continue
                memory.links = ([*memory.links, other] if linked
                                else [x for x in memory.links if x != other])
                _bump(memory)
                uow.put(memory, path)
            uow.event("updated", src.scope, id=source)
            return src

        return await self.stores.change(run)

    async def connect(self, pairs: list[tuple[str, str]], caller: Caller) -> int:
        """Link each pair both ways, in one unit (ingest's resolved [[links]]); a pair
        with a memory gone meanwhile is left out. Returns the links added."""
        def run(uow: UnitOfWork) -> int:
            added = 0
            bumped: set[str] = set()  # one new version per memory, however many links
            for a, b in pairs:
                try:
                    ends = [uow.load(a), uow.load(b)]
                except NotFound:
                    continue
                for (memory, path), other in zip(ends, (b, a), strict=True):
                    caller.check(memory.scope)
                    if other not in memory.links:
                        memory.links = [*memory.links, other]
                        if memory.id not in bumped:
                            bumped.add(memory.id)
                            _bump(memory)
                            uow.event("updated", memory.scope, id=memory.id)
                        uow.put(memory, path)
                        added += 1
            return added

        return await self.stores.change(run)

    async def merge(self, keep_id: str, other_ids: list[str]) -> Memory:
        """Fold duplicates into `keep_id`: tags, links and access counts are unioned or
        summed into it; each other file goes to the trash with `replaced_by` set."""
        def run(uow: UnitOfWork) -> Memory:
            keep, keep_path = uow.load(keep_id)
            for other_id in other_ids:
                try:
                    other, other_path = uow.load(other_id)
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
                    repoint_link(uow, peer, other_id, keep_id)
                other.replaced_by = keep_id
                other.updated_at = utcnow()
                uow.trash(other, other_path, rewrite=True)
                uow.event("deleted", other.scope, id=other_id, replaced_by=keep_id)
            keep.links = [x for x in keep.links if x not in other_ids and x != keep_id]
            _bump(keep)
            uow.put(keep, keep_path)
            uow.event("updated", keep.scope, id=keep_id)
            return keep

        return await self.stores.change(run)
