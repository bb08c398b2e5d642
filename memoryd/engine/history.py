"""History: every version of a memory (kept under trash/, with git's revisions when the
history runs), and an earlier version, or a soft delete, brought back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memoryd.engine.facts import Facts
from memoryd.engine.requests import Changes
from memoryd.engine.writes import Writes
from memoryd.errors import InvalidParams, NotFound
from memoryd.schema import Memory
from memoryd.scopes import Caller
from memoryd.store import frontmatter

if TYPE_CHECKING:
    from memoryd.history.git import GitHistory


class History:
    def __init__(self, facts: Facts, writes: Writes, git: GitHistory | None) -> None:
        self.facts = facts
        self.writes = writes
        self.git = git

    @property
    def from_git(self) -> bool:
        return bool(self.git and self.git.enabled)

    async def versions(self, memory_id: str, caller: Caller) -> list[dict[str, Any]]:
        """Every version, oldest first, each with its git revisions (none without git)."""
        versions = await self.facts.history(memory_id, caller)
        paths: dict[str, list[str]] = {}  # each id's files, for a name that holds no id
        for version in versions:
            paths.setdefault(version["id"], []).extend([version["path"]] if version["path"]
                                                       else [])
        revisions = {i: await self.git.revisions(i, p) if self.git else []
                     for i, p in paths.items()}  # one git log an id, not one a version
        for version in versions:
            version["revisions"] = revisions[version["id"]]
        return versions

    async def restore(self, memory_id: str, version: int | None, caller: Caller) -> Memory:
        """`version` brought back as the newest (kept under trash/, else from git); with
        no version, the memory out of the trash."""
        if version is None:
            return await self.writes.untrash(memory_id, caller)
        old = await self.facts.kept_version(memory_id, version, caller)
        text = None
        if old is None and self.git:
            where = await self.facts.path_of(memory_id)
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
        return await self.writes.update(memory_id, Changes(
            content=old.content, category=old.category, tags=old.tags, type=old.type,
            importance=old.importance), caller)
