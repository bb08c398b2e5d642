"""The conversation tools: memory_remember (a turn), memory_add (text to facts),
memory_history (the versions of a memory), memory_restore (an earlier one back)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memoryd.schema import to_wire
from memoryd.scopes import Caller
from memoryd.tools.params import (
    AddParams,
    IdParams,
    RememberParams,
    RestoreParams,
    TrashParams,
)
from memoryd.tools.registry import handler

if TYPE_CHECKING:
    from memoryd.engine import Engine

Result = dict[str, Any]


@handler("memory_remember")
async def memory_remember(engine: Engine, caller: Caller, p: RememberParams) -> Result:
    return await engine.conversation.remember(p.session, p.role, p.content, caller,
                                                  scope=p.scope, timestamp=p.timestamp)


@handler("memory_add")
async def memory_add(engine: Engine, caller: Caller, p: AddParams) -> Result:
    learned = await engine.learning.learn(p.text, caller, scope=p.scope,
                                                  session=p.session)
    return learned.to_wire()


@handler("memory_history")
async def memory_history(engine: Engine, caller: Caller, p: IdParams) -> Result:
    history = engine.history
    return {"id": p.id, "versions": await history.versions(p.id, caller),
            "git": history.from_git}


@handler("memory_restore")
async def memory_restore(engine: Engine, caller: Caller, p: RestoreParams) -> Result:
    memory = await engine.history.restore(p.id, p.version, caller)
    return {**to_wire(memory), "restored_from": p.version}


@handler("memory_trash")
async def memory_trash(engine: Engine, caller: Caller, p: TrashParams) -> Result:
    found, total = await engine.reads.trashed(caller, p.limit, p.offset)
    return {"memories": [{**to_wire(m), "trash": rel} for m, rel in found], "total": total}
