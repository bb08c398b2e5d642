"""RebuildProgress: how far a long start-up or `memoryd reindex` is.

Two steps, weighted equally: reading the files into the keyword catalog, then
embedding what has no current vector. Each 5% is logged once; `health` and `stats`
show it; the tools other than health and memory_read answer `-32005 busy: index
rebuilding (42%)` until start-up is over.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import structlog

log = structlog.get_logger("memoryd.index")

STEPS = ("reading files", "embedding")
LOG_EVERY = 5  # percent


class RebuildProgress:
    def __init__(self) -> None:
        self.active = True  # from the daemon's start until its indexes are ready
        self.step = STEPS[0]
        self.done = 0
        self.total = 0
        self.started = time.monotonic()
        self._logged = -LOG_EVERY
        self._lock = threading.Lock()  # advanced from the writer thread, read by the loop

    def begin(self, step: str, total: int) -> None:
        with self._lock:
            self.step, self.done, self.total = step, 0, total
        self._log()

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done = min(self.total, self.done + n)
        self._log()

    def finish(self) -> None:
        self.active = False

    @property
    def percent(self) -> int:
        with self._lock:
            within = self.done / self.total if self.total else 0.0
            return int(100 * (STEPS.index(self.step) + within) / len(STEPS))

    def _log(self) -> None:
        percent = self.percent
        if self.total and percent >= self._logged + LOG_EVERY:
            self._logged = percent - percent % LOG_EVERY
            log.info("index.rebuild.progress", percent=self._logged, step=self.step,
                     done=self.done, total=self.total,
                     elapsed_s=round(time.monotonic() - self.started, 1))

    def describe(self) -> dict[str, Any]:
        return {"percent": self.percent, "step": self.step, "done": self.done,
                "total": self.total, "elapsed_s": round(time.monotonic() - self.started, 1)}
