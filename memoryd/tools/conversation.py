"""The conversation tools: memory_remember (a turn), memory_add (text to facts),
memory_history (the versions of a memory), memory_restore (an earlier one back)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memoryd.engine.requests import Changes
from memoryd.errors import InvalidParams, NotFound
from memoryd.schema import to_wire
from memoryd.scopes import Caller
from memoryd.store import frontmatter
from memoryd.tools.params import (
    AddParams,
    IdParams,
    RememberParams,
    RestoreParams,
    TrashParams,
)
from memoryd.tools.registry import handler

if TYPE_CHECKING:
    from memoryd.server.app import App

Result = dict[str, Any]


@handler("memory_remember")
async def memory_remember(app: App, caller: Caller, p: RememberParams) -> Result:
    return await app.engine.conversation.remember(p.session, p.role, p.content, caller,
                                                  scope=p.scope, timestamp=p.timestamp)


@handler("memory_add")
async def memory_add(app: App, caller: Caller, p: AddParams) -> Result:
    learned = await app.engine.conversation.learn(p.text, caller, scope=p.scope,
                                                  session=p.session)
    return learned.to_wire()


@handler("memory_history")
async def memory_history(app: App, caller: Caller, p: IdParams) -> Result:
    versions = await app.engine.facts.history(p.id, caller)
    git = app.engine.git
    for version in versions:
        version["revisions"] = await git.revisions(version["id"]) if git else []
    return {"id": p.id, "versions": versions, "git": bool(git and git.enabled)}


@handler("memory_restore")
async def memory_restore(app: App, caller: Caller, p: RestoreParams) -> Result:
    if p.version is None:
        return {**to_wire(await app.engine.writes.untrash(p.id, caller)), "restored_from": None}
    old = await app.engine.facts.kept_version(p.id, p.version, caller)
    git = app.engine.git
    text = await git.text_at(p.id, p.version) if old is None and git else None
    if old is None and text is None:
        raise NotFound(f"version {p.version} of memory {p.id} is not in the history "
                       "(memory_history lists the versions kept)")
    if old is None:
        try:
            old = frontmatter.parse(text or "", p.id).memory
        except frontmatter.FrontMatterError as exc:
            raise InvalidParams("version", f"that version's file cannot be read: {exc}"
                                ) from None
    memory = await app.engine.writes.update(p.id, Changes(
        content=old.content, category=old.category, tags=old.tags, type=old.type,
        importance=old.importance), caller)
    return {**to_wire(memory), "restored_from": p.version}


@handler("memory_trash")
async def memory_trash(app: App, caller: Caller, p: TrashParams) -> Result:
    found, total = await app.engine.reads.trashed(caller, p.limit, p.offset)
    return {"memories": [{**to_wire(m), "trash": rel} for m, rel in found], "total": total}
