"""upgrade: inbox memories accessed at least storage.upgrade_threshold (3) times are
promoted to organized; the file moves to its category folder."""

from __future__ import annotations

from datetime import datetime
from pathlib import PurePosixPath

from memoryd.engine.requests import UPGRADE_CATEGORY
from memoryd.errors import NotFound, RpcError
from memoryd.jobs.needs import JobEngine
from memoryd.jobs.report import Change
from memoryd.scopes import Caller


async def run(engine: JobEngine, now: datetime, dry_run: bool) -> list[Change]:
    threshold = engine.config.storage.upgrade_threshold
    changes = []
    for memory_id, (path, count) in (await engine.reads.inbox_access_counts()).items():
        if count < threshold:
            continue
        to = f"categories/{UPGRADE_CATEGORY}/{PurePosixPath(path).name}"
        if not dry_run:
            try:
                memory = await engine.writes.upgrade(memory_id, None, Caller())
            except (NotFound, RpcError):
                continue
            to = engine.path_of(memory, path)
        changes.append(Change(id=memory_id, action="upgrade", path=path, to=to,
                              before={"phase": "inbox", "access_count": count},
                              after={"phase": "organized"}))
    return changes
