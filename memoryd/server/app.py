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
from memoryd.jobs.scheduler import Scheduler


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

    def saw_requests(self, count: int) -> None:
        self.requests += count
        self.last_request = time.monotonic()

    def idle_seconds(self) -> float:
        return time.monotonic() - self.last_request

    def health(self) -> dict[str, object]:
        return {
            "status": "stopping" if self.stopping else "ok",
            "version": __version__,
            "pid": os.getpid(),
            "root": str(self.root),
            "socket": str(self.socket_path),
            "uptime_s": round(time.monotonic() - self.started, 3),
            "connections": self.connections,
            "requests": self.requests,
        }
