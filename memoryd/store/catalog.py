"""Catalog: SQLite under index/ — the catalog of memories and their FTS5 text.

Derived from the files and rebuildable at any time: each row records the file's
path and sha256, so reconciliation can tell which files changed, and its stamp (size,
mtime, inode), so start-up can tell without reading them. Every committed change
bumps the catalog's generation and marks the rows it wrote with it: the corpus
snapshot (retrieval/snapshot.py) records the generation it reflects, and start-up
catches up on the rows written since. A catalog created afresh gets a new epoch,
so no snapshot of an older one is ever trusted. The FTS table uses the trigram
tokenizer: case-insensitive substring matching that also works for scripts without
spaces (Chinese, Japanese).

A catalog is three connections, each handed out as the object that uses it:
- `writer` (catalog_writes.py, Writer): every change, and the reads that must see
  the writer's own rows; one thread at a time (the writer worker);
- `reader` (catalog_reads.py, Reader): the calling thread's own connection, for
  every other query (reads run in parallel, one connection a thread);
- `inline` (a Reader too): the event loop's connection, for point reads by id that
  take microseconds.
Its schema and registered migrations are in catalog_schema.py; what it compiles from
values (the filter's WHERE clause, a search's FTS5 match) in catalog_sql.py; the
stamps start-up compares in catalog_stamps.py.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import structlog

from memoryd.store import sqlite
from memoryd.store.catalog_reads import Reader
from memoryd.store.catalog_schema import MIGRATIONS, SCHEMA, SCHEMA_VERSION
from memoryd.store.catalog_writes import FileRecord, Writer

__all__ = ["Catalog", "FileRecord", "Reader", "Writer"]

log = structlog.get_logger("memoryd.catalog")


class Catalog:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.existed = path.exists()  # False on a fresh root: created, not "rebuilt"
        self._rebuilt = False
        conn = self._open()
        meta = dict(conn.execute(
            "SELECT key, value FROM meta WHERE key IN ('epoch', 'generation')").fetchall())
        self.writer = Writer(conn, meta["epoch"], int(meta["generation"]))
        self._readers: dict[int, sqlite3.Connection] = {}  # by thread
        self._readers_lock = threading.Lock()
        self._mine = threading.local()
        # Point reads by id take microseconds: the event loop's thread does them on a
        # connection of its own (WAL readers never wait for the writer).
        self.inline = Reader(self._connect())

    def _open(self) -> sqlite3.Connection:
        """The writer's connection to a catalog of this schema, migrated in place; a
        file that is unreadable, of an older schema or a newer memoryd's is set aside
        and made anew (the catalog is derived: start-up fills it from the files)."""
        conn: sqlite3.Connection | None = None
        try:
            conn = self._connect()
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            current = row is not None and row[0] == SCHEMA_VERSION
        except sqlite3.DatabaseError:  # a corrupted or foreign file: rebuild it
            current = False
        if not current:
            conn = self._made_anew(conn)
        assert conn is not None
        try:
            before, after = sqlite.migrate(conn, MIGRATIONS)
        except sqlite.TooNew as exc:
            log.warning("catalog.too_new", path=str(self.path), problem=str(exc),
                        action="rebuilt from the files for this memoryd")
            conn = self._made_anew(conn)
            before = after = len(MIGRATIONS)
        if before != after:
            log.info("catalog.migrated", schema_from=before, schema_to=after)
        return conn

    def _made_anew(self, opened: sqlite3.Connection | None) -> sqlite3.Connection:
        self._rebuilt = True
        if opened is not None:  # none when the file could not even be opened
            opened.close()
        sqlite.remove(self.path)
        conn = self._connect()
        conn.executescript(SCHEMA)
        conn.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
        conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [
            ("schema", SCHEMA_VERSION), ("epoch", os.urandom(8).hex()), ("generation", "0")])
        return conn

    def _connect(self) -> sqlite3.Connection:
        return sqlite.connect(self.path, autocommit=True)

    @property
    def was_reset(self) -> bool:
        """An existing catalog was unreadable or of an older schema, and is rebuilt."""
        return self._rebuilt and self.existed

    @property
    def epoch(self) -> str:
        return self.writer.epoch

    @property
    def generation(self) -> int:
        return self.writer.generation

    @property
    def reader(self) -> Reader:
        """This thread's reader: reads run in parallel, one connection a thread.
        Opening one closes those of threads that have ended."""
        found: Reader | None = getattr(self._mine, "reader", None)
        if found is None:
            conn = self._connect()
            found = self._mine.reader = Reader(conn)
            with self._readers_lock:
                alive = {t.ident for t in threading.enumerate()}
                for ident in [i for i in self._readers if i not in alive]:
                    self._readers.pop(ident).close()
                self._readers[threading.get_ident()] = conn
        return found

    def reader_count(self) -> int:
        """Reader connections open now (one per thread that read and may read again)."""
        with self._readers_lock:
            return len(self._readers)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One commit on the writer (Writer.transaction)."""
        with self.writer.transaction() as conn:
            yield conn

    def compact(self) -> None:
        """Rewrite the file without what was deleted (a purge): FTS5's segments merged
        (a deleted row's terms stay in old segments until then), every free page
        dropped, the WAL emptied. Writer thread; readers see the same rows throughout."""
        conn = self.writer.conn
        for table in ("fts", "words"):
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        self.inline.conn.close()
        with self._readers_lock:
            for conn in self._readers.values():
                conn.close()
            self._readers.clear()
        self.writer.conn.close()
