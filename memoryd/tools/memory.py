"""The memory tools: parse (done by the params Struct), call the engine, shape the result."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from msgspec import UNSET

from memoryd import filters
from memoryd.engine import Changes, NewMemory
from memoryd.errors import InvalidParams, RpcError
from memoryd.lang.names import names
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
from memoryd.tools.results import (
    BacklinksResult,
    DeleteResult,
    EntitiesResult,
    EntityRow,
    LinkResult,
    ListResult,
    ReadResult,
    RenameResult,
    SearchResult,
    UpdateResult,
    WireMemory,
    WriteResult,
    memories,
    memory,
    wire,
)

if TYPE_CHECKING:
    from memoryd.engine import Engine
    from memoryd.store.catalog_entities import Named


def _news(ps: list[WriteParams]) -> list[NewMemory]:
    return [NewMemory(content=p.content, category=p.category, tags=p.tags, scope=p.scope,
                      source=p.source, type=p.type, importance=p.importance,
                      session=p.session, role=p.role, created_at=p.created_at,
                      title=p.title) for p in ps]


def memory_write_prepare(engine: Engine, caller: Caller, ps: list[WriteParams]
                         ) -> list[Any]:
    return engine.writes.prepare(_news(ps), caller).built


async def memory_write_many(engine: Engine, caller: Caller, ps: list[WriteParams],
                            early: list[Any] | None = None) -> list[WriteResult | RpcError]:
    results = await engine.writes.write_many(_news(ps), caller, built=early)
    return [r if isinstance(r, RpcError) else wire(
        r.memory, WriteResult, duplicate=not r.created, redacted=r.redacted or UNSET)
        for r in results]


@handler("memory_write", batch=memory_write_many, prepare=memory_write_prepare)
async def memory_write(engine: Engine, caller: Caller, p: WriteParams) -> WriteResult:
    (result,) = await memory_write_many(engine, caller, [p])
    if isinstance(result, RpcError):
        raise result
    return result


@handler("memory_read")
async def memory_read(engine: Engine, caller: Caller, p: ReadParams) -> ReadResult:
    found = await engine.reads.read(p.id, caller, count_access=p.count_access)
    return wire(found, ReadResult, entities=[e.name for e in names(found.content)])


@handler("memory_update")
async def memory_update(engine: Engine, caller: Caller, p: UpdateParams) -> UpdateResult:
    changes = Changes(content=p.content, title=p.title, category=p.category, tags=p.tags,
                      type=p.type, importance=p.importance)
    updated = await engine.writes.update(p.id, changes, caller, p.version)
    return wire(updated.memory, UpdateResult, redacted=updated.redacted or UNSET)


@handler("memory_delete")
async def memory_delete(engine: Engine, caller: Caller, p: IdParams) -> DeleteResult:
    trash = await engine.writes.delete(p.id, caller)
    return DeleteResult(id=p.id, deleted=True, trash=trash)


@handler("memory_list")
async def memory_list(engine: Engine, caller: Caller, p: ListParams) -> ListResult:
    where = filters.of(p, caller.visible_scopes(p.scope))
    found, total = await engine.reads.list_memories(where, p.limit, p.offset, p.order,
                                                    replaced=p.replaced)
    return ListResult(memories=memories(found), total=total, limit=p.limit, offset=p.offset)


@handler("memory_search")
async def memory_search(engine: Engine, caller: Caller, p: SearchParams) -> SearchResult:
    where = filters.of(p, caller.visible_scopes(p.scope))
    found, total = await engine.reads.search(p.query, where, p.limit, p.offset)
    return SearchResult(memories=memories(found), total=total, query=p.query, limit=p.limit,
                        offset=p.offset)


@handler("memory_tag")
async def memory_tag(engine: Engine, caller: Caller, p: TagParams) -> WireMemory:
    if not p.add and not p.remove:
        raise InvalidParams("add", "give tags to `add` and/or `remove`")
    return memory(await engine.writes.tag(p.id, p.add, p.remove, caller))


@handler("memory_link")
async def memory_link(engine: Engine, caller: Caller, p: LinkParams) -> LinkResult:
    await engine.links.link(p.source, p.target, caller, linked=True)
    return LinkResult(source=p.source, target=p.target, linked=True)


@handler("memory_unlink")
async def memory_unlink(engine: Engine, caller: Caller, p: LinkParams) -> LinkResult:
    await engine.links.link(p.source, p.target, caller, linked=False)
    return LinkResult(source=p.source, target=p.target, linked=False)


@handler("memory_backlinks")
async def memory_backlinks(engine: Engine, caller: Caller, p: IdParams) -> BacklinksResult:
    return BacklinksResult(id=p.id, memories=memories(await engine.reads.backlinks(p.id,
                                                                                   caller)))


@handler("memory_entities")
async def memory_entities(engine: Engine, caller: Caller, p: EntitiesParams
                          ) -> EntitiesResult:
    where = filters.of(p, caller.visible_scopes(p.scope))
    reads = engine.reads
    if p.name is None:
        found, total = await reads.entities(where, p.limit, p.offset)
        return EntitiesResult(entities=[_entity(e) for e in found], total=total)
    entity, named, beside = await reads.entity(where, p.name, p.limit)
    return EntitiesResult(entities=[_entity(entity)] if entity else [],
                          total=int(bool(entity)), memories=memories(named),
                          beside=[_entity(e) for e in beside])


def _entity(entity: Named) -> EntityRow:
    return EntityRow.of(entity.key, entity.name, entity.memories, entity.first, entity.last,
                        entity.aliases)


@handler("memory_rename")
async def memory_rename(engine: Engine, caller: Caller, p: RenameParams) -> RenameResult:
    renamed, before, now = await engine.writes.rename(p.id, p.title, caller)
    return wire(renamed, RenameResult, path=before, to=now)


@handler("memory_upgrade")
async def memory_upgrade(engine: Engine, caller: Caller, p: UpgradeParams) -> WireMemory:
    return memory(await engine.writes.upgrade(p.id, p.category, caller))
