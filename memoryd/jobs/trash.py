"""Moving job candidates to the trash, reported as changes (shared by expire and decay)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from memoryd.errors import NotFound
from memoryd.jobs.needs import JobEngine
from memoryd.jobs.report import Change
from memoryd.scopes import Caller


async def to_trash(engine: JobEngine, candidates: Iterable[tuple[str, str]], dry_run: bool,
                   before: dict[str, Any]) -> list[Change]:
    """Soft-delete each (id, path); a dry run only says where each file would go."""
    changes = []
    for memory_id, path in candidates:
        to = engine.trash_path(path, memory_id)
        if not dry_run:
            try:
                to = await engine.writes.delete(memory_id, Caller())
            except NotFound:
                continue  # gone meanwhile
        changes.append(Change(id=memory_id, action="trash", path=path, to=to,
                              before=before, after={"deleted": True}))
    return changes
