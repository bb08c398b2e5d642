"""decay: organized notes older than storage.decay_threshold (30d) that were never
accessed go to the trash. Conversation turns are left to decay-sweep."""

from __future__ import annotations

from datetime import datetime, timedelta

from memoryd.access import Caller
from memoryd.engine import Engine
from memoryd.errors import NotFound
from memoryd.jobs.report import Change


async def run(engine: Engine, now: datetime, dry_run: bool) -> list[Change]:
    cutoff = now - timedelta(seconds=engine.config.storage.decay_threshold)
    changes = []
    for memory_id, path in engine.index.unaccessed_organized(cutoff.timestamp()):
        if engine.stats.pending(memory_id):
            continue  # read since the last flush: not "never accessed"
        to = engine.files.trash_path(path)
        if not dry_run:
            try:
                to = await engine.delete(memory_id, Caller())
            except NotFound:
                continue
        changes.append(Change(id=memory_id, action="trash", path=path, to=to,
                              before={"phase": "organized", "access_count": 0},
                              after={"deleted": True}))
    return changes
