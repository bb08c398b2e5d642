"""expire: inbox memories past their TTL (storage.inbox_ttl, default 7d) go to the trash."""

from __future__ import annotations

from datetime import datetime

from memoryd.access import Caller
from memoryd.engine import Engine
from memoryd.errors import NotFound
from memoryd.jobs.report import Change


async def run(engine: Engine, now: datetime, dry_run: bool) -> list[Change]:
    changes = []
    for memory_id, path in engine.index.expired_inbox(now.timestamp()):
        to = engine.files.trash_path(path)
        if not dry_run:
            try:
                to = await engine.delete(memory_id, Caller())
            except NotFound:
                continue  # gone meanwhile
        changes.append(Change(id=memory_id, action="trash", path=path, to=to,
                              before={"phase": "inbox"}, after={"deleted": True}))
    return changes
