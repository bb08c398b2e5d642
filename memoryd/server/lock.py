"""The advisory PID lock on `<root>/.daemon.lock`: one daemon per root.

The lock is the truth, the PID inside is informational. The kernel drops a
flock when its holder dies, so a stale file never blocks a restart. The file is
never unlinked (that would race with a starting daemon).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class AlreadyRunning(Exception):
    def __init__(self, root: Path, pid: str) -> None:
        super().__init__(f"memoryd is already running on {root} (pid {pid or 'unknown'}); "
                         "stop it first or use another --root")
        self.pid = pid


def acquire(root: Path) -> int:
    """Take the lock (before touching the socket or stores); returns the fd to keep open."""
    fd = os.open(root / ".daemon.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        other = os.pread(fd, 32, 0).decode(errors="replace").strip()
        os.close(fd)
        raise AlreadyRunning(root, other) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    os.fsync(fd)
    return fd
