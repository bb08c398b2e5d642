"""History: every version of a memory (the facts it replaced and that replaced it, the
versions every update kept under trash/, git's revisions when the history runs), and an
earlier version, or a soft delete, brought back."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from memoryd.engine.requests import Changes
from memoryd.engine.stores import Stores
from memoryd.engine.writes import Writes
from memoryd.errors import InvalidParams, NotFound
from memoryd.schema import Memory, as_aware, content_hash
from memoryd.scopes import Caller
from memoryd.store import frontmatter

if TYPE_CHECKING:
    from memoryd.history.git import GitHistory


class VersionEntry(msgspec.Struct, kw_only=True):
    """One version of a memory as the history shows it: its text and dates, what it
    replaced and what replaced it, the event that made it, and its file (None: only
    git has it); with git, the memory's committed revisions."""

    id: str
    version: int
    kind: str
    content: str
    created_at: datetime
    updated_at: datetime
    superseded_at: datetime | None
    replaces: list[str]
    replaced_by: str | None
    derived_from: list[str]
    event: Literal["ADD", "UPDATE"]
    current: bool
    path: str | None
    revisions: list[dict[str, Any]] = msgspec.field(default_factory=list)


class History:
    def __init__(self, stores: Stores, writes: Writes, git: GitHistory | None) -> None:
        self.stores = stores
        self.writes = writes
        self.git = git

    @property
    def from_git(self) -> bool:
        return bool(self.git and self.git.enabled)

    async def versions(self, memory_id: str, caller: Caller) -> list[VersionEntry]:
        """Every version, oldest first, each with its own git revisions (none without
        git): the commits that wrote that version, each with its diff."""
        versions = await self._versions(memory_id, caller)
        paths: dict[str, list[str]] = {}  # each id's files, for a name that holds no id
        for version in versions:
            paths.setdefault(version.id, []).extend([version.path] if version.path else [])
        for memory, files in paths.items():  # one git log an id, not one a version
            revisions = await self.git.revisions(memory, files) if self.git else []
            _share(revisions, [v for v in versions if v.id == memory])
        return versions

    async def restore(self, memory_id: str, version: int | None, caller: Caller) -> Memory:
        """`version` brought back as the newest (kept under trash/, else from git); with
        no version, the memory out of the trash."""
        if version is None:
            return await self.writes.untrash(memory_id, caller)
        old = await self._kept_version(memory_id, version, caller)
        text = None
        if old is None and self.git:
            where = await self._path_of(memory_id)
            text = await self.git.text_at(memory_id, version, [where] if where else [])
        if old is None and text is None:
            raise NotFound(f"version {version} of memory {memory_id} is not in the history "
                           "(memory_history lists the versions kept)")
        if old is None:
            try:
                old = frontmatter.parse(text or "", memory_id).memory
            except frontmatter.FrontMatterError as exc:
                raise InvalidParams("version", f"that version's file cannot be read: {exc}"
                                    ) from None
        return (await self.writes.update(memory_id, Changes(
            content=old.content, category=old.category, tags=old.tags, type=old.type,
            importance=old.importance), caller)).memory

    # -- the versions kept ----------------------------------------------------------------
    async def _versions(self, memory_id: str, caller: Caller) -> list[VersionEntry]:
        """Every version of a memory, oldest first: the facts it replaced and that
        replaced it (replaces / replaced_by), and each one's own earlier versions, kept
        under trash/ by every update (UnitOfWork)."""
        def run() -> list[tuple[Memory, str | None]]:
            seen: dict[str, tuple[Memory, str | None]] = {}
            todo = [memory_id]
            while todo and len(seen) < 1000:
                current = todo.pop()
                if current in seen:
                    continue
                found = self._find(current)
                if found is None:
                    continue
                seen[current] = found
                memory = found[0]
                todo.extend(memory.replaces)
                if memory.replaced_by:
                    todo.append(memory.replaced_by)
            # By text as well: a file re-added whole after it was refused half-saved keeps
            # its version number, and its kept text is another version all the same.
            # The text itself, not the file's content_hash field: a copy another sync
            # tool made and edited may still carry the hash of the text it was made from.
            versions = {(m.id, m.version, content_hash(m.content)): (m, path)
                        for m, path in seen.values()}
            for m, path in self.stores.files.trashed_of(set(seen)):
                versions.setdefault((m.id, m.version, content_hash(m.content)), (m, path))
            return list(versions.values())

        versions = await self.stores.workers.read(run)
        if not any(m.id == memory_id for m, _ in versions):
            raise NotFound(f"no memory with id {memory_id!r}")
        for memory, _ in versions:
            caller.check(memory.scope)
        never = datetime.max.replace(tzinfo=UTC)
        versions.sort(key=lambda v: (v[0].created_at, v[0].superseded_at or never,
                                     v[0].version, _current(v[0])))
        first: dict[str, int] = {}  # each memory's oldest version
        for m, _ in versions:
            first.setdefault(m.id, m.version)
        return [VersionEntry(
            id=m.id, version=m.version, kind=m.kind, content=m.content,
            created_at=m.created_at, updated_at=m.updated_at, superseded_at=m.superseded_at,
            replaces=m.replaces, replaced_by=m.replaced_by, derived_from=m.derived_from,
            event="UPDATE" if m.replaces or m.version > first[m.id] else "ADD",
            current=_current(m), path=path) for m, path in versions]

    async def _kept_version(self, memory_id: str, version: int, caller: Caller
                            ) -> Memory | None:
        """Version `version` of a memory as an update kept it under trash/, or None.
        Two machines may each have written a version of that number (a sync keeps
        both): the later one."""
        def run() -> Memory | None:
            kept = [m for m, _ in self.stores.files.trashed_copies(memory_id)
                    if m.version == version]
            return max(kept, key=lambda m: (as_aware(m.updated_at), m.content_hash),
                       default=None)

        found = await self.stores.workers.read(run)
        if found is not None:
            caller.check(found.scope)
        return found

    async def _path_of(self, memory_id: str) -> str | None:
        """Where a memory's file is (indexed, else in trash/), or None."""
        found = await self.stores.workers.read(self._find, memory_id)
        return found[1] if found else None

    def _find(self, memory_id: str) -> tuple[Memory, str | None] | None:
        """A memory by id: indexed (current, or superseded history), else in trash/."""
        indexed = self.stores.catalog.reader.located(memory_id)
        if indexed is not None:
            return indexed
        copies = self.stores.files.trashed_copies(memory_id)
        return copies[0] if copies else None


def _current(memory: Memory) -> bool:
    """The version that is live: not superseded, not a version kept by an update."""
    return memory.superseded_at is None and memory.replaced_by is None


def _share(revisions: list[dict[str, Any]], entries: list[VersionEntry]) -> None:
    """Each revision of one memory under the version it wrote. One that wrote a version
    no file keeps (only git has it), or that moved or removed the file (no version),
    goes under the newest version before it, else the oldest."""
    for revision in revisions:
        number = revision["version"]
        same = [e for e in entries if e.version == number]
        before = [e for e in entries if number is None or e.version < number]
        target = (same or before or entries)[-1 if same or before else 0]
        target.revisions.append(revision)
