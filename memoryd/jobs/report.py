"""What a job run changed (or, with dry_run, would change): ids and paths, before -> after."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec


class Change(msgspec.Struct, omit_defaults=True):
    id: str
    action: str  # "trash", "upgrade", ...
    path: str | None = None  # where the file was
    to: str | None = None  # where it went
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None


class JobReport(msgspec.Struct):
    job: str
    dry_run: bool
    started_at: datetime
    duration_ms: float = 0.0
    changes: list[Change] = msgspec.field(default_factory=list)
    error: str | None = None

    def summary(self) -> dict[str, Any]:
        return {"changes": len(self.changes), "dry_run": self.dry_run,
                "duration_ms": self.duration_ms, "error": self.error}
