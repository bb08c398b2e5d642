"""The memory tools: parse (done by the params Struct), call the engine, shape the result."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any

from memoryd.access import Caller
from memoryd.app import App
from memoryd.engine import Changes, NewMemory
from memoryd.errors import InvalidParams, RpcError
from memoryd.schema import to_wire
from memoryd.store.keyword import Filters
from memoryd.tools.params import (
    IdParams,
    LinkParams,
    ListParams,
    SearchParams,
    TagParams,
    UpdateParams,
    UpgradeParams,
    WriteParams,
)
from memoryd.tools.registry import tool

Result = dict[str, Any]


async def memory_write_many(app: App, caller: Caller, ps: list[WriteParams]
                            ) -> list[Result | RpcError]:
    news = [NewMemory(content=p.content, category=p.category, tags=p.tags, scope=p.scope,
                      source=p.source, type=p.type, importance=p.importance,
                      session=p.session, role=p.role, created_at=p.created_at) for p in ps]
    results = await app.engine.write_many(news, caller)
    return [r if isinstance(r, RpcError) else to_wire(r[0]) for r in results]


@tool("memory_write", WriteParams, batch=memory_write_many)
async def memory_write(app: App, caller: Caller, p: WriteParams) -> Result:
    """Remember a note. Without `category` it lands in the inbox (phase inbox, 7-day TTL);
    with one it is organized at once. With `role` (and `session`) it is a conversation turn.
    An exact duplicate (same content in the same scope) returns the existing memory."""
    (result,) = await memory_write_many(app, caller, [p])
    if isinstance(result, RpcError):
        raise result
    return result


@tool("memory_read", IdParams)
async def memory_read(app: App, caller: Caller, p: IdParams) -> Result:
    """Read one memory by id (counts as an access)."""
    return to_wire(await app.engine.read(p.id, caller))


@tool("memory_update", UpdateParams)
async def memory_update(app: App, caller: Caller, p: UpdateParams) -> Result:
    """Change a memory's content, category, tags, type or importance; `version` + 1.
    Pass the `version` you read to fail with -32002 if somebody changed it meanwhile."""
    changes = Changes(content=p.content, category=p.category, tags=p.tags, type=p.type,
                      importance=p.importance)
    return to_wire(await app.engine.update(p.id, changes, caller, p.version))


@tool("memory_delete", IdParams)
async def memory_delete(app: App, caller: Caller, p: IdParams) -> Result:
    """Delete a memory: its file moves under trash/ (a soft delete)."""
    trash = await app.engine.delete(p.id, caller)
    return {"id": p.id, "deleted": True, "trash": trash}


@tool("memory_list", ListParams)
async def memory_list(app: App, caller: Caller, p: ListParams) -> Result:
    """List memories, newest first, filtered by phase, category, scope, source and tags
    (all must match). Without `scope`: global plus the caller's own scope."""
    filters = Filters(scopes=caller.visible_scopes(p.scope), phase=p.phase,
                      category=p.category, source=p.source, tags=p.tags)
    memories, total = await app.engine.list(filters, p.limit, p.offset)
    return {"memories": [to_wire(m) for m in memories], "total": total,
            "limit": p.limit, "offset": p.offset}


@tool("memory_search", SearchParams)
async def memory_search(app: App, caller: Caller, p: SearchParams) -> Result:
    """Exact keyword search: every word of `query` must occur in the content or tags
    (case-insensitive, substrings match, works for Chinese), newest first, with filters.
    `from`/`to` are dates (YYYY-MM-DD, inclusive). Needs no model."""
    if p.from_ and p.to and p.from_ > p.to:
        raise InvalidParams("to", f"is before `from` ({p.to} < {p.from_})")
    filters = Filters(
        scopes=caller.visible_scopes(p.scope), phase=p.phase, category=p.category,
        kind=p.kind, type=p.type, session=p.session, tags=p.tags,
        since=datetime.combine(p.from_, time(), tzinfo=UTC) if p.from_ else None,
        until=datetime.combine(p.to, time(), tzinfo=UTC) + timedelta(days=1) if p.to else None,
    )
    memories, total = await app.engine.search(p.query, filters, p.limit, p.offset)
    return {"memories": [to_wire(m) for m in memories], "total": total, "query": p.query,
            "limit": p.limit, "offset": p.offset}


@tool("memory_tag", TagParams)
async def memory_tag(app: App, caller: Caller, p: TagParams) -> Result:
    """Add and/or remove tags on a memory."""
    if not p.add and not p.remove:
        raise InvalidParams("add", "give tags to `add` and/or `remove`")
    return to_wire(await app.engine.tag(p.id, p.add, p.remove, caller))


@tool("memory_link", LinkParams)
async def memory_link(app: App, caller: Caller, p: LinkParams) -> Result:
    """Link two memories (bidirectional: each lists the other in `links`)."""
    await app.engine.link(p.source, p.target, caller, linked=True)
    return {"source": p.source, "target": p.target, "linked": True}


@tool("memory_unlink", LinkParams)
async def memory_unlink(app: App, caller: Caller, p: LinkParams) -> Result:
    """Remove the link between two memories, in both directions."""
    await app.engine.link(p.source, p.target, caller, linked=False)
    return {"source": p.source, "target": p.target, "linked": False}


@tool("memory_backlinks", IdParams)
async def memory_backlinks(app: App, caller: Caller, p: IdParams) -> Result:
    """The memories that link to this one."""
    memories = await app.engine.backlinks(p.id, caller)
    return {"id": p.id, "memories": [to_wire(m) for m in memories]}


@tool("memory_upgrade", UpgradeParams)
async def memory_upgrade(app: App, caller: Caller, p: UpgradeParams) -> Result:
    """Promote an inbox memory to organized: its file moves to categories/<category>/
    (`knowledge` when no category is given) and its inbox TTL is cleared."""
    return to_wire(await app.engine.upgrade(p.id, p.category, caller))
