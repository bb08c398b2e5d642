"""App: what every tool handler and server method can reach — the engine, the config,
the scheduler and the daemon's counters."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from memoryd import __version__
from memoryd.config import Config
from memoryd.engine import Engine
from memoryd.errors import Busy, BusyReason, RpcError
from memoryd.jobs.scheduler import Scheduler

# What a daemon answers while its indexes are being built: the rest is busy.
WHILE_STARTING = frozenset({"initialize", "ping", "health", "stats", "tools/list",
                            "memory_read"})


@dataclass
class App:
    engine: Engine
    config: Config
    root: Path
    socket_path: Path
    scheduler: Scheduler | None = None
    started: float = field(default_factory=time.monotonic)
    connections: int = 0
    requests: int = 0
    last_request: float = field(default_factory=time.monotonic)
    stopping: bool = False
    # False while the daemon starts (indexes, conversation backlog, git): the daemon
    # sets it when it is ready; an in-process engine (tests) is ready once started.
    ready: bool = True

    def saw_requests(self, count: int) -> None:
        self.requests += count
        self.last_request = time.monotonic()

    def idle_seconds(self) -> float:
        return time.monotonic() - self.last_request

    @property
    def starting(self) -> bool:
        return self.engine.sync.progress.active or not self.ready

    def gate(self, name: str) -> RpcError | None:
        """Busy for what needs the indexes while start-up builds them."""
        if not self.starting or name in WHILE_STARTING or name.startswith("notifications/"):
            return None
        progress = self.engine.sync.progress
        what = f"index rebuilding ({progress.percent}%)" if progress.active else "starting"
        return Busy(f"busy: {what}; retry when `health` says ok", {
            "reason": BusyReason.STARTING,
            "rebuild": progress.describe() if progress.active else None})

    def health(self) -> dict[str, object]:
        status = "stopping" if self.stopping else "starting" if self.starting else "ok"
        extra = {"rebuild": self.engine.sync.progress.describe()} if self.starting else {}
        return {
            "status": status, **extra,
            "version": __version__,
            "pid": os.getpid(),
            "root": str(self.root),
            "socket": str(self.socket_path),
            "uptime_s": round(time.monotonic() - self.started, 3),
            "connections": self.connections,
            "requests": self.requests,
        }
