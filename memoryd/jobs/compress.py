"""compress: when a scope holds more than compression.threshold (50) uncompressed
sessions, the oldest half are each summarised (LLM, or extractively) into a semantic
memory with `compression_source` and `source_session`; their turns are marked
`compressed` and leave retrieval (include_compressed: true brings them back).
Nothing is deleted."""

from __future__ import annotations

from datetime import datetime

from memoryd.jobs.needs import JobEngine
from memoryd.jobs.report import Change


async def run(engine: JobEngine, now: datetime, dry_run: bool) -> list[Change]:
    folded = await engine.upkeep.compress(engine.config.compression.threshold, dry_run)
    return [Change(id=f.get("id", ""), action="compress",
                   before={"scope": f["scope"], "session": f["session"], "turns": f["turns"]},
                   after={"summary": f["summary"]}) for f in folded]
