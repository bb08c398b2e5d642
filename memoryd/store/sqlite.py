"""The SQLite settings every derived index shares, and its removal for a rebuild."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def connect(path: Path, autocommit: bool = False) -> sqlite3.Connection:
    """WAL (readers never wait for the writer), and synchronous=NORMAL: the index is
    derived, so a crash may lose its last commits, and start-up reconciliation with the
    files restores them."""
    conn = sqlite3.connect(path, check_same_thread=False,
                           isolation_level=None if autocommit else "DEFERRED")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=5000")
    return conn


def remove(path: Path) -> None:
    """The database file and its WAL companions."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
