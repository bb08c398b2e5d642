"""The stamps the catalog recorded (path -> the file's size:mtime_ns:inode when it was
indexed), which start-up compares with the files instead of reading them.

Standard library only: start-up's walk runs in a child process without memoryd's
packages (store/walk.py), which loads this file by its path to read the catalog the
same way the daemon does."""

from __future__ import annotations

import sqlite3
from pathlib import Path

# Every catalog row's "path NUL stamp" ("" for none), NUL-joined: one string, not a row
# at a time. Read a row at a time, each of 130,000 steps gives the interpreter lock
# back, and at start-up the threads reading the snapshot take it each time.
STAMPS_SQL = ("SELECT group_concat(path || char(0) || coalesce(stamp, ''), char(0))"
              " FROM memories")


def read(conn: sqlite3.Connection) -> dict[str, str]:
    """Path -> the stamp recorded ("" for none), on `conn`."""
    (joined,) = conn.execute(STAMPS_SQL).fetchone()
    fields = joined.split("\0") if joined else []
    return dict(zip(fields[::2], fields[1::2], strict=True))


def recorded(catalog: Path) -> dict[str, str]:
    """`read` of the catalog file at `catalog`, opened read-only."""
    conn = sqlite3.connect(f"{catalog.absolute().as_uri()}?mode=ro", uri=True, timeout=5)
    try:
        return read(conn)
    finally:
        conn.close()
