"""The conversation tools: memory_remember (a turn), memory_add (text to facts),
memory_history (the versions of a memory), memory_restore (an earlier one back)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memoryd.engine.conversation import Remembered
from memoryd.scopes import Caller
from memoryd.tools.params import (
    AddParams,
    IdParams,
    RememberParams,
    RestoreParams,
    TrashParams,
)
from memoryd.tools.registry import handler
from memoryd.tools.results import (
    AddResult,
    HistoryResult,
    RestoreResult,
    TrashedMemory,
    TrashResult,
    wire,
)

if TYPE_CHECKING:
    from memoryd.engine import Engine


@handler("memory_remember")
async def memory_remember(engine: Engine, caller: Caller, p: RememberParams) -> Remembered:
    return await engine.conversation.remember(p.session, p.role, p.content, caller,
                                                  scope=p.scope, timestamp=p.timestamp)


@handler("memory_add")
async def memory_add(engine: Engine, caller: Caller, p: AddParams) -> AddResult:
    learned = await engine.learning.learn(p.text, caller, scope=p.scope, session=p.session)
    return AddResult(path=learned.path, facts=learned.facts)


@handler("memory_history")
async def memory_history(engine: Engine, caller: Caller, p: IdParams) -> HistoryResult:
    history = engine.history
    return HistoryResult(id=p.id, versions=await history.versions(p.id, caller),
                         git=history.from_git)


@handler("memory_restore")
async def memory_restore(engine: Engine, caller: Caller, p: RestoreParams) -> RestoreResult:
    memory = await engine.history.restore(p.id, p.version, caller)
    return wire(memory, RestoreResult, restored_from=p.version)


@handler("memory_trash")
async def memory_trash(engine: Engine, caller: Caller, p: TrashParams) -> TrashResult:
    found, total = await engine.reads.trashed(caller, p.limit, p.offset)
    return TrashResult(memories=[wire(m, TrashedMemory, trash=rel) for m, rel in found],
                       total=total)
