"""decay: organized notes older than storage.decay_threshold (30d) that were never
accessed go to the trash. Conversation turns are left to decay-sweep."""

from __future__ import annotations

from datetime import datetime, timedelta

from memoryd.jobs.needs import JobEngine
from memoryd.jobs.report import Change
from memoryd.jobs.trash import to_trash


async def run(engine: JobEngine, now: datetime, dry_run: bool) -> list[Change]:
    cutoff = now - timedelta(seconds=engine.config.storage.decay_threshold)
    candidates = await engine.reads.never_accessed_organized(cutoff)
    return await to_trash(engine, candidates, dry_run,
                          before={"phase": "organized", "access_count": 0})
