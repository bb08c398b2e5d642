"""expire: inbox memories past their TTL (storage.inbox_ttl, default 7d) go to the trash."""

from __future__ import annotations

from datetime import datetime

from memoryd.jobs.needs import JobEngine
from memoryd.jobs.report import Change
from memoryd.jobs.trash import to_trash


async def run(engine: JobEngine, now: datetime, dry_run: bool) -> list[Change]:
    return await to_trash(engine, await engine.reads.expired_inbox(now), dry_run,
                          before={"phase": "inbox"})
