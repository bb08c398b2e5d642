"""The SQLite settings every index shares, its removal for a rebuild, and schema
migrations as small registered functions (for files that hold learned data)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

Migration = Callable[[sqlite3.Connection], None]


class TooNew(Exception):
    """The file was written by a newer memoryd (more migrations than this one knows)."""


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


def migrate(conn: sqlite3.Connection, migrations: Sequence[Migration]) -> tuple[int, int]:
    """Run, in order, each migration the file has not had yet, each in its own
    transaction; `PRAGMA user_version` counts how many ran. Returns (before, after)."""
    before = conn.execute("PRAGMA user_version").fetchone()[0]
    if before > len(migrations):
        raise TooNew(f"schema version {before}, this memoryd knows {len(migrations)}")
    for version, step in enumerate(migrations[before:], start=before + 1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            step(conn)
            conn.execute(f"PRAGMA user_version = {version}")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    return before, len(migrations)
