"""The conversation tools: memory_remember (a turn), memory_add (text to facts),
memory_history (the versions of a memory)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memoryd.scopes import Caller
from memoryd.tools.params import AddParams, IdParams, RememberParams
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
    return {"id": p.id, "versions": await app.engine.facts.history(p.id, caller)}
