"""The memory tools: parse (done by the params Struct), call the engine, shape the result."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from memoryd import filters
from memoryd.engine import Changes, NewMemory
from memoryd.errors import InvalidParams, RpcError
from memoryd.lang.names import names
from memoryd.schema import to_wire
from memoryd.scopes import Caller
from memoryd.tools.params import (
    EntitiesParams,
    IdParams,
    LinkParams,
    ListParams,
    ReadParams,
    RenameParams,
    SearchParams,
    TagParams,
    UpdateParams,
    UpgradeParams,
    WriteParams,
)
from memoryd.tools.registry import handler

if TYPE_CHECKING:
    from memoryd.engine import Engine
    from memoryd.store.catalog_entities import Named

Result = dict[str, Any]


def _news(ps: list[WriteParams]) -> list[NewMemory]:
    return [NewMemory(content=p.content, category=p.category, tags=p.tags, scope=p.scope,
                      source=p.source, type=p.type, importance=p.importance,
                      session=p.session, role=p.role, created_at=p.created_at,
                      title=p.title) for p in ps]


def memory_write_prepare(engine: Engine, caller: Caller, ps: list[WriteParams]
                         ) -> list[Any]:
    return engine.writes.prepare(_news(ps), caller).built


async def memory_write_many(engine: Engine, caller: Caller, ps: list[WriteParams],
                            early: list[Any] | None = None) -> list[Result | RpcError]:
    results = await engine.writes.write_many(_news(ps), caller, built=early)
    # `duplicate`: the same content was already stored in that scope; this is that memory.
    return [r if isinstance(r, RpcError) else {**to_wire(r.memory), "duplicate": not r.created}
            | _redacted(r.redacted) for r in results]


def _redacted(found: int) -> Result:
    """`redacted`: how many secrets were cut out of what was given before it was
    written (the count the engine made as it cut them)."""
    return {"redacted": found} if found else {}


@handler("memory_write", batch=memory_write_many, prepare=memory_write_prepare)
async def memory_write(engine: Engine, caller: Caller, p: WriteParams) -> Result:
    (result,) = await memory_write_many(engine, caller, [p])
    if isinstance(result, RpcError):
        raise result
    return result


@handler("memory_read")
async def memory_read(engine: Engine, caller: Caller, p: ReadParams) -> Result:
    memory = await engine.reads.read(p.id, caller, count_access=p.count_access)
    return {**to_wire(memory), "entities": [e.name for e in names(memory.content)]}


@handler("memory_update")
async def memory_update(engine: Engine, caller: Caller, p: UpdateParams) -> Result:
    changes = Changes(content=p.content, title=p.title, category=p.category, tags=p.tags,
                      type=p.type, importance=p.importance)
    updated = await engine.writes.update(p.id, changes, caller, p.version)
    return to_wire(updated.memory) | _redacted(updated.redacted)


@handler("memory_delete")
async def memory_delete(engine: Engine, caller: Caller, p: IdParams) -> Result:
    trash = await engine.writes.delete(p.id, caller)
    return {"id": p.id, "deleted": True, "trash": trash}


@handler("memory_list")
async def memory_list(engine: Engine, caller: Caller, p: ListParams) -> Result:
    where = filters.of(p, caller.visible_scopes(p.scope))
    memories, total = await engine.reads.list_memories(where, p.limit, p.offset, p.order,
                                                           replaced=p.replaced)
    return {"memories": [to_wire(m) for m in memories], "total": total,
            "limit": p.limit, "offset": p.offset}


@handler("memory_search")
async def memory_search(engine: Engine, caller: Caller, p: SearchParams) -> Result:
    where = filters.of(p, caller.visible_scopes(p.scope))
    memories, total = await engine.reads.search(p.query, where, p.limit, p.offset)
    return {"memories": [to_wire(m) for m in memories], "total": total, "query": p.query,
            "limit": p.limit, "offset": p.offset}


@handler("memory_tag")
async def memory_tag(engine: Engine, caller: Caller, p: TagParams) -> Result:
    if not p.add and not p.remove:
        raise InvalidParams("add", "give tags to `add` and/or `remove`")
    return to_wire(await engine.writes.tag(p.id, p.add, p.remove, caller))


@handler("memory_link")
async def memory_link(engine: Engine, caller: Caller, p: LinkParams) -> Result:
    await engine.links.link(p.source, p.target, caller, linked=True)
    return {"source": p.source, "target": p.target, "linked": True}


@handler("memory_unlink")
async def memory_unlink(engine: Engine, caller: Caller, p: LinkParams) -> Result:
    await engine.links.link(p.source, p.target, caller, linked=False)
    return {"source": p.source, "target": p.target, "linked": False}


@handler("memory_backlinks")
async def memory_backlinks(engine: Engine, caller: Caller, p: IdParams) -> Result:
    memories = await engine.reads.backlinks(p.id, caller)
    return {"id": p.id, "memories": [to_wire(m) for m in memories]}


@handler("memory_entities")
async def memory_entities(engine: Engine, caller: Caller, p: EntitiesParams) -> Result:
    where = filters.of(p, caller.visible_scopes(p.scope))
    reads = engine.reads
    if p.name is None:
        found, total = await reads.entities(where, p.limit, p.offset)
        return {"entities": [_entity(e) for e in found], "total": total}
    entity, memories, beside = await reads.entity(where, p.name, p.limit)
    return {"entities": [_entity(entity)] if entity else [], "total": int(bool(entity)),
            "memories": [to_wire(m) for m in memories],
            "beside": [_entity(e) for e in beside]}


def _entity(entity: Named) -> Result:
    first, last = (msgspec.to_builtins(datetime.fromtimestamp(t, UTC))
                   for t in (entity.first, entity.last))
    return {"key": entity.key, "name": entity.name, "memories": entity.memories,
            "first": first, "last": last, "aliases": entity.aliases}


@handler("memory_rename")
async def memory_rename(engine: Engine, caller: Caller, p: RenameParams) -> Result:
    memory, before, now = await engine.writes.rename(p.id, p.title, caller)
    return to_wire(memory) | {"path": before, "to": now}


@handler("memory_upgrade")
async def memory_upgrade(engine: Engine, caller: Caller, p: UpgradeParams) -> Result:
    return to_wire(await engine.writes.upgrade(p.id, p.category, caller))
