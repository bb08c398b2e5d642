"""Writes: new memories and changes to one memory, each through a UnitOfWork."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import PurePosixPath
from typing import Any

import structlog

from memoryd.config import Config
from memoryd.engine.links import link_typed, repoint_link
from memoryd.engine.requests import (
    UPGRADE_CATEGORY,
    Built,
    Changes,
    NewMemory,
    Prepared,
    Updated,
    Written,
)
from memoryd.engine.sessions import foreign_session
from memoryd.engine.stores import Stores
from memoryd.engine.unit import UnitOfWork
from memoryd.errors import Conflict, InvalidFile, InvalidParams, NotFound, RpcError
from memoryd.ingest.markup import relinked
from memoryd.lang.titles import title_for
from memoryd.schema import (
    INGEST_PREFIX,
    MAX_TAGS,
    Memory,
    as_aware,
    clean_tags,
    content_hash,
    new_id,
    utcnow,
)
from memoryd.scopes import Caller

log = structlog.get_logger("memoryd.engine")


def _apply(memory: Memory, changes: Changes,
           scrub: Callable[[str], tuple[str, Counter[str]]]) -> int:
    """`changes` made to `memory`; its new content and title `scrub`bed of secrets
    first (how many were cut is returned). A title derived from the content follows it
    (derived again when the unit writes it)."""
    cut: Counter[str] = Counter()
    if changes.content is not None:
        content, found = scrub(changes.content)
        cut += found
        content = content.strip()
        if not content:
            raise InvalidParams("content", "must not be empty or only white space")
        if memory.title == title_for(memory):
            memory.title = ""
        memory.content, memory.content_hash = content, content_hash(content)
    if changes.title is not None:
        title, found = scrub(changes.title)
        cut += found
        memory.title = title.strip()
    if changes.category is not None and memory.kind != "turn":
        # Changes holds the params' value, checked against CATEGORIES when decoded.
        memory.category = changes.category  # type: ignore[assignment]
        memory.phase = "inbox" if changes.category == "inbox" else "organized"
        if memory.phase == "organized":
            memory.expires_at = None
    if changes.tags is not None:
        memory.tags = clean_tags(changes.tags)
    if changes.type is not None:
        memory.type = changes.type  # type: ignore[assignment]  # decoded against TYPES
    if changes.importance is not None:
        memory.importance = changes.importance
    return cut.total()


class Writes:
    def __init__(self, stores: Stores, config: Config) -> None:
        self.stores = stores
        self.config = config

    async def write(self, new: NewMemory, caller: Caller) -> tuple[Memory, bool]:
        """Store a new memory; an exact duplicate in the same scope returns the original."""
        (result,) = await self.write_many([new], caller)
        if isinstance(result, RpcError):
            raise result
        return result.memory, result.created

    def prepare(self, news: list[NewMemory], caller: Caller) -> Prepared:
        """These writes are queued behind others: build their memories now and stage
        them for embedding (HybridIndex.embed_ahead), so the model is busy while the
        writes before them commit (a pipelining client's next batch). What is built is
        handed to `write_many` (`built`), which checks the caller again; None where a
        write is refused (it is refused again, and answered, in its turn)."""
        built: list[Built | None] = []
        for new in news:
            scope = new.scope or caller.default_scope
            made = None
            if caller.can_see(scope):
                with contextlib.suppress(RpcError):
                    made = self.build(new, scope)
            built.append(made)
        return Prepared(built, self.stores.hybrid.embed_ahead(
            [b.memory for b in built if b is not None]))

    async def write_many(self, news: list[NewMemory], caller: Caller,
                         defer_vectors: bool = False,
                         built: list[Built | None] | None = None) -> list[Written | RpcError]:
        """Group commit: many new memories in one unit (files fsync'd, then one catalog
        transaction and one model call). Each item succeeds or fails alone. With
        `defer_vectors`, the vector work that can wait is left to the background
        worker (HybridIndex.upsert_many). `built`: what `prepare` built of each (None:
        build it now)."""
        results: list[Written | RpcError | None] = []
        made: list[Built] = []
        for n, new in enumerate(news):
            try:
                scope = new.scope or caller.default_scope
                caller.check(scope)
                early = built[n] if built is not None else None
                made.append(early if early is not None and early.memory.scope == scope
                            else self.build(new, scope))
                results.append(None)
            except RpcError as exc:
                results.append(exc)
        memories = [b.memory for b in made]
        stored = iter(await self.stores.change(lambda uow: self._store(uow, memories),
                                               defer_vectors=defer_vectors, staged=memories)
                      if made else [])
        redacted = iter([b.redacted for b in made])
        out: list[Written | RpcError] = []
        for slot in results:
            if slot is not None:
                out.append(slot)
                continue
            result, cut = next(stored), next(redacted)
            out.append(result if isinstance(result, RpcError)
                       else Written(result[0], result[1], cut))
        return out

    def build(self, new: NewMemory, scope: str) -> Built:
        """The memory a write of `new` into `scope` stores (its secrets cut, its id
        given), and how many secrets were cut; the caller's scope is checked by the
        caller."""
        scrub = self.stores.redactor.scrub
        content, found = scrub(new.content)
        content = content.strip()
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
        title, in_title = scrub(new.title) if new.title else ("", Counter[str]())
        aliases = []
        for alias in new.aliases or []:  # kept where Obsidian reads them: `aliases:`
            cleaned, cut = scrub(alias)
            in_title.update(cut)
            if cleaned.strip() and "\n" not in cleaned:
                aliases.append(cleaned.strip())
        return Built(Memory(
            id=new_id(), content=content, content_hash=content_hash(content),
            title=title.strip(),
            kind="turn" if is_turn else "reminder" if is_reminder else "note",
            due_at=as_aware(new.due_at) if new.due_at else None,
            phase="organized" if organized or is_turn else "inbox",
            # NewMemory's fields are the params' strings, each checked when decoded.
            category=category,  # type: ignore[arg-type]
            type=new.type or ("episodic" if is_turn  # type: ignore[arg-type]
                              else "working" if is_reminder else "semantic"),
            scope=scope, session=new.session, role=new.role,  # type: ignore[arg-type]
            tags=clean_tags(new.tags or []), source=new.source or "",
            source_path=new.source_path,
            importance=0.5 if new.importance is None else new.importance,
            created_at=created, updated_at=now, pending=new.pending and is_turn,
            expires_at=None if organized or is_turn or not new.expires else now + timedelta(
                seconds=self.config.storage.inbox_ttl),
            extra={"aliases": aliases} if aliases else {},
        ), found.total() + in_title.total())

    def _store(self, uow: UnitOfWork, memories: list[Memory]
               ) -> list[tuple[Memory, bool] | RpcError]:
        results: list[tuple[Memory, bool] | RpcError] = []
        batch: dict[tuple[str, str, str], Memory] = {}
        sessions: dict[str, str] = {}
        for memory in memories:
            refused = foreign_session(uow.catalog, memory.session, memory.scope, sessions)
            if refused is not None:
                results.append(refused)
                continue
            if memory.kind != "turn":
                key = (memory.content_hash, memory.scope, memory.kind)
                if key in batch:
                    results.append((batch[key], False))
                    continue
                duplicate = uow.catalog.writer.find_duplicate(*key)
                if duplicate is not None:
                    try:
                        results.append((uow.load(duplicate)[0], False))
                        continue
                    except NotFound:
                        pass
            if _types_links(memory):
                link_typed(uow, memory)
            try:  # one memory the schema refuses fails alone, not its whole batch
                uow.put(memory, uow.place(memory))
            except RpcError as exc:
                results.append(exc)
                continue
            if memory.kind != "turn":
                batch[(memory.content_hash, memory.scope, memory.kind)] = memory
            uow.event("written", memory.scope, id=memory.id)
            results.append((memory, True))
        return results

    async def modify(self, memory_id: str, caller: Caller, change: Callable[[Memory], None],
                     event: str = "updated") -> Memory:
        """Load, check the caller's scope, change, version + 1, save (moving the file when
        its category changed)."""
        def run(uow: UnitOfWork) -> Memory:
            memory, path = uow.load(memory_id)
            caller.check(memory.scope)
            change(memory)
            if _types_links(memory):
                link_typed(uow, memory)
            memory.version += 1
            memory.updated_at = utcnow()
            uow.put(memory, uow.place(memory, path), origin=path)
            uow.event(event, memory.scope, id=memory_id)
            return memory

        return await self.stores.change(run)

    async def update(self, memory_id: str, changes: Changes, caller: Caller,
                     expected_version: int | None = None) -> Updated:
        """The memory changed, and how many secrets were cut from what was given."""
        cut = 0

        def change(memory: Memory) -> None:
            nonlocal cut
            if expected_version is not None and expected_version != memory.version:
                raise Conflict(f"memory {memory_id} is at version {memory.version}, not "
                               f"{expected_version}: re-read it and apply your change again")
            cut = _apply(memory, changes, self.stores.redactor.scrub)

        return Updated(await self.modify(memory_id, caller, change), cut)

    async def update_many(self, changes: dict[str, Changes], caller: Caller
                          ) -> list[Memory | RpcError]:
        """Many updates in one unit (ingest): each version + 1; a memory gone or
        refused meanwhile is that item's error."""
        def run(uow: UnitOfWork) -> list[Memory | RpcError]:
            out: list[Memory | RpcError] = []
            for memory_id, change in changes.items():
                try:
                    memory, path = uow.load(memory_id)
                    caller.check(memory.scope)
                    _apply(memory, change, self.stores.redactor.scrub)
                    memory.version += 1
                    memory.updated_at = utcnow()
                    uow.put(memory, uow.place(memory, path), origin=path)
                except RpcError as exc:
                    out.append(exc)
                    continue
                uow.event("updated", memory.scope, id=memory_id)
                out.append(memory)
            return out

        return await self.stores.change(run)

    async def tag(self, memory_id: str, add: list[str], remove: list[str],
                  caller: Caller) -> Memory:
        dropping = set(clean_tags(remove))

        def change(memory: Memory) -> None:
            tags = [t for t in memory.tags if t not in dropping]
            tags = clean_tags(tags + [t for t in add if t not in dropping])
            if len(tags) > MAX_TAGS:
                raise InvalidParams("add", f"a memory holds at most {MAX_TAGS} tags; this "
                                    f"would give it {len(tags)}: remove some first")
            memory.tags = tags

        return await self.modify(memory_id, caller, change)

    async def upgrade(self, memory_id: str, category: str | None, caller: Caller) -> Memory:
        if category == "inbox":
            raise InvalidParams("category", "upgrade moves a memory out of the inbox; "
                                "name one of the other categories")

        def change(memory: Memory) -> None:
            if memory.phase != "inbox":
                raise InvalidParams("id", f"memory {memory_id} is already organized "
                                    f"(category {memory.category})")
            # `category` is the params' value, checked against CATEGORIES when decoded.
            memory.category = category or UPGRADE_CATEGORY  # type: ignore[assignment]
            memory.phase = "organized"
            memory.expires_at = None

        return await self.modify(memory_id, caller, change)

    async def rename(self, memory_id: str, title: str | None, caller: Caller
                     ) -> tuple[Memory, str, str]:
        """The memory's file named from its title again (`title`: a new one first);
        (the memory, its path before, its path now)."""
        def run(uow: UnitOfWork) -> tuple[Memory, str, str]:
            memory, path = uow.load(memory_id)
            caller.check(memory.scope)
            if not path.startswith("categories/"):
                raise InvalidParams("id", f"memory {memory_id} is a {memory.kind} under "
                                    "sessions/: its file is named by its time, not renamed")
            if title is not None:
                memory.title = self.stores.redactor.clean(title).strip()
            to = uow.place(memory, path, rename=True)
            if to != path or title is not None:
                memory.version += 1
                memory.updated_at = utcnow()
                uow.put(memory, to, origin=path)
                uow.event("updated", memory.scope, id=memory_id, by="rename")
            if to != path:  # the memories linked to it name its file: in their
                # wikilinks (written anew by put) and in links typed in their text
                old, new = PurePosixPath(path).stem, PurePosixPath(to).stem
                for peer in memory.links:
                    with contextlib.suppress(NotFound, InvalidFile):
                        other, other_path = uow.load(peer)
                        text = relinked(other.content, old, new)
                        if text != other.content:
                            other.content, other.content_hash = text, content_hash(text)
                            other.version += 1
                            other.updated_at = utcnow()
                            uow.event("updated", other.scope, id=peer, by="rename")
                        uow.put(other, other_path)
            return memory, path, to

        return await self.stores.change(run)

    async def mark_notified(self, memory_id: str, when: datetime) -> Memory:
        """A reminder was announced: record it in its file so it is announced once."""
        def change(memory: Memory) -> None:
            memory.notified_at = when

        return await self.modify(memory_id, Caller(), change)

    async def delete(self, memory_id: str, caller: Caller) -> str:
        """Soft delete: the file moves under trash/, links to it are dropped."""
        def run(uow: UnitOfWork) -> str:
            memory, path = uow.load(memory_id)
            caller.check(memory.scope)
            for peer in memory.links:
                repoint_link(uow, peer, memory_id, None)
            uow.event("deleted", memory.scope, id=memory_id)
            return uow.trash(memory, path)

        return await self.stores.change(run)

    async def untrash(self, memory_id: str, caller: Caller) -> Memory:
        """Bring a soft-deleted memory back from trash/ to where it belongs (its links
        to others are not restored: they were dropped on both sides)."""
        files = self.stores.files

        def run(uow: UnitOfWork) -> Memory:
            if self.stores.catalog.writer.record_by_id(memory_id) is not None:
                raise InvalidParams("id", f"memory {memory_id} is not in the trash (it is "
                                          "live, or a replaced fact: see memory_history)")
            copies = files.trashed_copies(memory_id)
            if not copies:
                raise NotFound(f"no memory with id {memory_id!r} in the trash")
            memory, rel = max(copies, key=lambda c: c[0].version)
            caller.check(memory.scope)
            memory.links = []
            if memory.replaced_by == memory.id:  # only kept versions: its file went by hand
                memory.replaced_by = None
            uow.put(memory, uow.place(memory), origin=rel)  # named anew: trash names are ids
            uow.event("restored", memory.scope, id=memory_id)
            return memory

        return await self.stores.change(run)

    async def assign_episodes(self, assigned: dict[str, tuple[str, str]]) -> int:
        """Record each turn's episode and topic in its file (decay-sweep)."""
        return await self.settle({turn_id: {"episode": episode, "topic": topic}
                                  for turn_id, (episode, topic) in assigned.items()})

    async def settle(self, fields: dict[str, dict[str, Any]]) -> int:
        """Record what background work found (an episode, an importance, a flag) in each
        memory's file, as the access counts are: no new version. Memories deleted
        meanwhile are skipped; returns how many were saved."""
        def run(uow: UnitOfWork) -> int:
            saved = 0
            for memory_id, values in fields.items():
                try:
                    memory, path = uow.load(memory_id)
                except NotFound:
                    continue
                for name, value in values.items():
                    setattr(memory, name, value)
                uow.put(memory, path)
                saved += 1
            return saved

        return await self.stores.change(run)

    async def flush_access_counts(self) -> int:
        """Write buffered access counts into their files, in one unit."""
        counts = self.stores.access_counts
        if not counts.dirty:
            return 0

        def run(uow: UnitOfWork) -> int:
            flushed = 0
            for memory_id in counts.dirty:
                try:
                    memory, path = uow.load(memory_id)
                except NotFound:
                    counts.forget(memory_id)
                    continue
                uow.put(memory, path)
                flushed += 1
            return flushed

        flushed = await self.stores.change(run)
        log.debug("stats.flushed", memories=flushed)
        return flushed


def _types_links(memory: Memory) -> bool:
    """Whether a write's text is read for typed `[[links]]`: a note's, not an ingest's
    (which links its notes by their names and aliases itself, all at once)."""
    return (memory.kind == "note" and "[[" in memory.content
            and not memory.source.startswith(INGEST_PREFIX))
