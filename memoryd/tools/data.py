"""Data in and out: memory_ingest, memory_export, memory_import."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from memoryd import filters
from memoryd.errors import Forbidden
from memoryd.protocol.progress import NO_PROGRESS, Progress
from memoryd.scopes import Caller
from memoryd.tools.params import ExportParams, ImportParams, IngestParams, PurgeParams, SyncParams
from memoryd.tools.registry import handler

if TYPE_CHECKING:
    from memoryd.engine import Engine

Result = dict[str, Any]
TOTALS = ("added", "updated", "unchanged")


@handler("memory_ingest")
async def memory_ingest(engine: Engine, caller: Caller, p: IngestParams,
                        progress: Progress = NO_PROGRESS) -> Result:
    reports = await engine.ingest.run(p.source, p.path, caller, dry_run=p.dry_run,
                                          scope=p.scope, progress=progress)
    totals = {k: sum(r[k] for r in reports) for k in TOTALS}
    return {"reports": reports, **totals, "dry_run": p.dry_run}


@handler("memory_export")
async def memory_export(engine: Engine, caller: Caller, p: ExportParams) -> Result:
    engine = engine
    if not p.after:  # a fresh export: access counts still buffered go to the files first
        await engine.flush_stats()
    which = filters.of(p, caller.visible_scopes(p.scope))
    lines, after = await engine.transfer.export_page(p.after, p.limit, which,
                                                     p.include_trash)
    total = await engine.transfer.count() if not p.after else None
    return {"lines": lines, "next": after, "total": total}


@handler("memory_import")
async def memory_import(engine: Engine, caller: Caller, p: ImportParams) -> Result:
    lines = [line if isinstance(line, str) else msgspec.json.encode(line)
             for line in p.lines]  # an object is read as the line it was
    result = await engine.transfer.import_lines(lines, p.first_line, p.on_conflict,
                                                    caller)
    if result.imported or result.replaced or result.kept_both:
        engine.learning.wake()  # imported turns may wait for background work
    return result.to_wire()


@handler("memory_purge")
async def memory_purge(engine: Engine, caller: Caller, p: PurgeParams) -> Result:
    if not caller.is_user:
        raise Forbidden("a purge rewrites every scope and the history: only the user's own "
                        "tooling (a connection that does not name itself) may run it")
    return await engine.purge.run(p.text, dry_run=p.dry_run)


@handler("memory_sync")
async def memory_sync(engine: Engine, caller: Caller, p: SyncParams) -> Result:
    if not caller.is_user:
        raise Forbidden("a sync acts on every scope: only the user's own tooling (a "
                        "connection that does not name itself) may run it")
    return await engine.sync_remote(dry_run=p.dry_run)
