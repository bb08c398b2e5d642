"""memory_remind: a reminder, due at a time given as ISO 8601 or in words."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from memoryd.config import zone
from memoryd.engine import NewMemory
from memoryd.errors import InvalidParams
from memoryd.lang import due as due_words
from memoryd.scopes import Caller
from memoryd.tools.params import RemindParams
from memoryd.tools.registry import handler
from memoryd.tools.results import WireMemory, memory

if TYPE_CHECKING:
    from memoryd.engine import Engine


@handler("memory_remind")
async def memory_remind(engine: Engine, caller: Caller, p: RemindParams) -> WireMemory:
    if (p.due_at is None) == (p.when is None):
        raise InvalidParams("when", "give exactly one of `due_at` (ISO 8601) or `when` "
                            "(e.g. 'tomorrow at 9')")
    due = p.due_at
    if p.when is not None:
        due = due_words.parse(p.when, datetime.now(zone(engine.config.timezone)))
        if due is None:
            raise InvalidParams("when", f"could not read a time in {p.when!r}; try "
                                "'tomorrow at 9', 'in 2 hours', 'next Friday 3pm' or ISO 8601")
    written, _ = await engine.writes.write(
        NewMemory(content=p.content, kind="reminder", due_at=due, scope=p.scope,
                  tags=p.tags, source="memory_remind"), caller)
    return memory(written)
