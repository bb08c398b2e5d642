"""Data in and out: memory_ingest, memory_export, memory_import."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from memoryd import filters
from memoryd.engine.transfer import ImportResult
from memoryd.errors import Forbidden
from memoryd.protocol.progress import NO_PROGRESS, Progress
from memoryd.scopes import Caller
from memoryd.tools.params import ExportParams, ImportParams, IngestParams, PurgeParams, SyncParams
from memoryd.tools.registry import handler
from memoryd.tools.results import (
    ExportResult,
    IngestResult,
    PurgeResult,
    SourceReport,
    SyncResult,
)

if TYPE_CHECKING:
    from memoryd.engine import Engine


@handler("memory_ingest")
async def memory_ingest(engine: Engine, caller: Caller, p: IngestParams,
                        progress: Progress = NO_PROGRESS) -> IngestResult:
    reports = await engine.ingest.run(p.source, p.path, caller, dry_run=p.dry_run,
                                      scope=p.scope, progress=progress)
    return IngestResult(reports=[SourceReport.of(r) for r in reports],
                        added=sum(r.added for r in reports),
                        updated=sum(r.updated for r in reports),
                        unchanged=sum(r.unchanged for r in reports), dry_run=p.dry_run)


@handler("memory_export")
async def memory_export(engine: Engine, caller: Caller, p: ExportParams) -> ExportResult:
    if not p.after:  # a fresh export: access counts still buffered go to the files first
        await engine.flush_stats()
    which = filters.of(p, caller.visible_scopes(p.scope))
    lines, after = await engine.transfer.export_page(p.after, p.limit, which,
                                                     p.include_trash)
    total = await engine.transfer.count() if not p.after else None
    return ExportResult(lines=lines, next=after, total=total)


@handler("memory_import")
async def memory_import(engine: Engine, caller: Caller, p: ImportParams) -> ImportResult:
    lines = [line if isinstance(line, str) else msgspec.json.encode(line)
             for line in p.lines]  # an object is read as the line it was
    result = await engine.transfer.import_lines(lines, p.first_line, p.on_conflict,
                                                    caller)
    if result.imported or result.replaced or result.kept_both:
        engine.learning.wake()  # imported turns may wait for background work
    return result


@handler("memory_purge")
async def memory_purge(engine: Engine, caller: Caller, p: PurgeParams) -> PurgeResult:
    if not caller.is_user:
        raise Forbidden("a purge rewrites every scope and the history: only the user's own "
                        "tooling (a connection that does not name itself) may run it")
    return PurgeResult.of(await engine.purge.run(p.text, dry_run=p.dry_run))


@handler("memory_sync")
async def memory_sync(engine: Engine, caller: Caller, p: SyncParams) -> SyncResult:
    if not caller.is_user:
        raise Forbidden("a sync acts on every scope: only the user's own tooling (a "
                        "connection that does not name itself) may run it")
    # The engine's report is the sync's record too (status, the job's report): its
    # shape is checked here, once, on the way out.
    return msgspec.convert(await engine.sync_remote(dry_run=p.dry_run), SyncResult)
