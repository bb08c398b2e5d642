"""The catalog's writer: every change, on its one writer connection, and the reads that
must see the writer's own rows (a unit of work's checks, start-up's reconciliation,
the graph's). One thread at a time uses it (the writer worker).

Every committed change bumps the catalog's generation and marks the rows it wrote
with it (see Catalog)."""

from __future__ import annotations

import contextlib
import functools
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime

import msgspec

from memoryd.filters import EQUAL
from memoryd.schema import INGEST_PREFIX, Memory
from memoryd.store import catalog_entities, catalog_stamps
from memoryd.store.catalog_sql import (
    ROWID_SLOTS,
    by_ids,
    decode,
    paths_by_ids,
    rowid_second,
    spaced,
)

_encode = msgspec.json.Encoder().encode

_RECORD = "id, path, file_sha, scope, stamp"  # FileRecord's columns


@dataclass(frozen=True)
class FileRecord:
    id: str
    path: str
    file_sha: str
    scope: str
    stamp: str | None = None


def _stamp(moment: datetime | None) -> float | None:
    return moment.timestamp() if moment is not None else None


def _row(memory: Memory) -> dict[str, object]:
    """The memories row's columns that come from the memory itself, by name."""
    return {
        **{column: getattr(memory, column) for column in EQUAL},
        "id": memory.id, "content_hash": memory.content_hash, "scope": memory.scope,
        "source_path": memory.source_path, "created_at": memory.created_at.timestamp(),
        "updated_at": memory.updated_at.timestamp(), "expires_at": _stamp(memory.expires_at),
        "due_at": _stamp(memory.due_at), "notified": int(memory.notified_at is not None),
        "episode": memory.episode, "topic": memory.topic, "access_count": memory.access_count,
        "superseded_at": _stamp(memory.superseded_at), "pending": int(memory.pending),
        "compressed": int(memory.compressed), "doc": _encode(memory)}


@functools.cache
def _insert(columns: tuple[str, ...]) -> str:
    """The memories INSERT naming `columns` (one statement, made once)."""
    return (f"INSERT INTO memories ({', '.join(columns)})"
            f" VALUES ({', '.join(':' + column for column in columns)})")


class Writer:
    def __init__(self, conn: sqlite3.Connection, epoch: str, generation: int) -> None:
        self.conn = conn
        self.epoch = epoch  # a catalog made anew gets a new one: no older snapshot fits
        self.generation = generation

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One commit: a new generation, which the rows it writes carry."""
        before = self.generation
        try:
            with _Transaction(self.conn) as conn:
                self.generation += 1
                conn.execute("UPDATE meta SET value = ? WHERE key = 'generation'",
                             (str(self.generation),))
                yield conn
        except BaseException:
            self.generation = before
            raise

    def upsert(self, memory: Memory, path: str, sha: str, stamp: str | None = None) -> None:
        conn = self.conn
        old = conn.execute("SELECT rowid FROM memories WHERE id = ? OR path = ?",
                           (memory.id, path)).fetchall()
        for (rowid,) in old:
            self._delete_rowid(rowid)
        rowid = self._free_rowid(memory.created_at.timestamp())
        row = _row(memory) | {"rowid": rowid, "path": path, "file_sha": sha,
                              "stamp": stamp, "gen": self.generation}
        conn.execute(_insert(tuple(row)), row)
        if memory.source_path is not None and memory.source.startswith(INGEST_PREFIX):
            conn.execute("INSERT OR IGNORE INTO lines VALUES (?, ?)",
                         (memory.source, memory.source_path))
        if memory.superseded_at is not None:
            # A superseded fact is history (memory_history, `as_of`): kept out of the
            # keyword index and the list/search keys, so no search or job sees it.
            return
        tags = " ".join(memory.tags)
        conn.execute("INSERT INTO fts (rowid, content, tags) VALUES (?, ?, ?)",
                     (rowid, memory.content, tags))
        conn.execute("INSERT INTO words (rowid, content, tags) VALUES (?, ?, ?)",
                     (rowid, spaced(memory.content), spaced(tags)))
        if not memory.compressed:  # out of every read unless asked for (filters.py)
            conn.execute("INSERT INTO search_keys VALUES (?, ?, ?)",
                         (rowid, memory.scope, memory.created_at.timestamp()))
            conn.execute("INSERT INTO scope_counts VALUES (?, 1)"
                         " ON CONFLICT (scope) DO UPDATE SET n = n + 1", (memory.scope,))
        conn.executemany("INSERT INTO tags VALUES (?, ?)", [(rowid, t) for t in memory.tags])
        conn.executemany("INSERT INTO links VALUES (?, ?)", [(memory.id, d) for d in memory.links])
        catalog_entities.write(conn, rowid, memory)

    def trash_lines_read(self) -> bool:
        """Whether the trash's ingested lines are in `lines` (catalog_schema.LINES)."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'lines'").fetchone()
        return row is not None and row[0] == "trash"

    def remember_lines(self, lines: Iterable[tuple[str, str]]) -> None:
        """(source, source_path) of the trash's ingested memories, which no index holds;
        afterwards `trash_lines_read`."""
        self.conn.executemany("INSERT OR IGNORE INTO lines VALUES (?, ?)", lines)
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('lines', 'trash')")

    def _free_rowid(self, created_at: float) -> int:
        """The next rowid of the memory's creation second (see ROWID_SLOTS)."""
        first = rowid_second(created_at) * ROWID_SLOTS
        # <= the second's last rowid: the last second's end (2**63) is past SQLite's range
        (last,) = self.conn.execute("SELECT max(rowid) FROM memories WHERE rowid >= ?"
                                      " AND rowid <= ?", (first, first + ROWID_SLOTS - 1)
                                      ).fetchone()
        rowid = first if last is None else last + 1
        if rowid >= first + ROWID_SLOTS:
            raise RuntimeError(f"{ROWID_SLOTS} memories created in one second")
        return rowid

    def _delete_rowid(self, rowid: int) -> None:
        conn = self.conn
        (mem_id,) = conn.execute("SELECT id FROM memories WHERE rowid = ?", (rowid,)).fetchone()
        indexed = conn.execute("SELECT content, tags FROM fts WHERE rowid = ?",
                               (rowid,)).fetchone()
        if indexed is not None:
            conn.execute("INSERT INTO words (words, rowid, content, tags)"
                         " VALUES ('delete', ?, ?, ?)",
                         (rowid, spaced(indexed[0]), spaced(indexed[1])))
        conn.execute("DELETE FROM fts WHERE rowid = ?", (rowid,))
        keyed = conn.execute("SELECT scope FROM search_keys WHERE rowid = ?",
                             (rowid,)).fetchone()
        if keyed is not None:  # a superseded fact, a compressed turn: no search_keys row
            conn.execute("DELETE FROM search_keys WHERE rowid = ?", (rowid,))
            conn.execute("UPDATE scope_counts SET n = n - 1 WHERE scope = ?", keyed)
            conn.execute("DELETE FROM scope_counts WHERE scope = ? AND n = 0", keyed)
        conn.execute("DELETE FROM tags WHERE mem = ?", (rowid,))
        catalog_entities.forget(conn, rowid)
        conn.execute("DELETE FROM links WHERE src = ?", (mem_id,))
        conn.execute("DELETE FROM memories WHERE rowid = ?", (rowid,))

    def delete(self, memory_id: str) -> None:
        row = self.conn.execute("SELECT rowid FROM memories WHERE id = ?",
                                  (memory_id,)).fetchone()
        if row:
            self._delete_rowid(row[0])

    def delete_path(self, path: str) -> str | None:
        row = self.conn.execute("SELECT rowid, id FROM memories WHERE path = ?",
                                  (path,)).fetchone()
        if not row:
            return None
        self._delete_rowid(row[0])
        return str(row[1])

    def record_by_path(self, path: str) -> FileRecord | None:
        row = self.conn.execute(f"SELECT {_RECORD} FROM memories WHERE path = ?",
                                  (path,)).fetchone()
        return FileRecord(*row) if row else None

    def record_by_link(self, target: str) -> FileRecord | None:
        """The memory file a `[[target]]` names as Obsidian resolves it: a file under
        categories/ whose path, without `.md`, is `target` or ends in `/target`, case
        ignored (ASCII's, as LIKE ignores it); of several, the shortest path."""
        escaped = "".join("\\" + c if c in "\\%_" else c for c in target) + ".md"
        row = self.conn.execute(
            f"SELECT {_RECORD} FROM memories WHERE path LIKE 'categories/%' AND "
            "(path LIKE ? ESCAPE '\\' OR path LIKE ? ESCAPE '\\') "
            "ORDER BY length(path), path LIMIT 1", (escaped, "%/" + escaped)).fetchone()
        return FileRecord(*row) if row else None

    def checkpoint(self) -> None:
        """Every commit so far durable in the database file (the WAL is fsync'd only
        at checkpoints: synchronous=NORMAL)."""
        self.conn.execute("PRAGMA wal_checkpoint(FULL)")

    def set_path(self, old: str, new: str) -> None:
        """The file at `old` was renamed to `new` (its stamp is the same)."""
        self.conn.execute("UPDATE memories SET path = ? WHERE path = ?", (new, old))

    def set_stamp(self, path: str, stamp: str) -> None:
        """The file at `path` is as indexed, with a new stamp (touched, copied back)."""
        self.conn.execute("UPDATE memories SET stamp = ? WHERE path = ?", (stamp, path))

    def stamps(self) -> dict[str, str | None]:
        """Path -> the stamp its file had when indexed (start-up's cheap check)."""
        return {path: mark or None for path, mark in catalog_stamps.read(self.conn).items()}

    def ids(self) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT id FROM memories")}

    def id_count(self) -> int:
        """`len(ids())`, as the writer sees them, without reading them."""
        return int(self.conn.execute("SELECT count(*) FROM memories").fetchone()[0])

    def written_since(self, generation: int) -> list[Memory]:
        """The memories whose rows a commit after `generation` wrote."""
        # `+created_at`: the generation index finds the few rows; ordering by the
        # created_at index instead walked every row (0.2 s at 100k, at every start).
        rows = self.conn.execute("SELECT doc FROM memories WHERE gen > ? ORDER BY "
                                   "+created_at, id", (generation,))
        return [decode(r[0]) for r in rows]

    def record_by_id(self, memory_id: str) -> FileRecord | None:
        row = self.conn.execute(f"SELECT {_RECORD} FROM memories WHERE id = ?",
                                  (memory_id,)).fetchone()
        return FileRecord(*row) if row else None

    def paths_of(self, ids: Iterable[str]) -> dict[str, str]:
        """Each of these memories' file path, where the catalog has it."""
        return paths_by_ids(self.conn, ids)

    def all_records(self) -> dict[str, FileRecord]:
        rows = self.conn.execute(f"SELECT {_RECORD} FROM memories")
        return {r[1]: FileRecord(*r) for r in rows}

    def load(self, ids: Iterable[str]) -> list[Memory]:
        """Memories by id, on the writer's connection (sees its own uncommitted rows)."""
        return by_ids(self.conn, list(ids))

    def all_memories(self) -> list[Memory]:
        rows = self.conn.execute("SELECT doc FROM memories ORDER BY created_at, id")
        return [decode(r[0]) for r in rows]

    def find_duplicate(self, content_hash: str, scope: str, kind: str) -> str | None:
        """A memory of the same kind with the same content in the same scope (a reminder
        and a note with the same words are different memories)."""
        row = self.conn.execute(
            "SELECT id FROM memories WHERE content_hash = ? AND scope = ? AND +kind = ?"
            " AND superseded_at IS NULL LIMIT 1", (content_hash, scope, kind)).fetchone()
        return row[0] if row else None

    def episode_turns(self) -> dict[str, tuple[str, str | None]]:
        """turn id -> (episode, topic) for every turn in an episode, as the files say
        (writer connection: the graph is reconciled in the writer thread)."""
        rows = self.conn.execute(
            "SELECT id, episode, topic FROM memories WHERE kind = 'turn'"
            " AND episode IS NOT NULL")
        return {r[0]: (r[1], r[2]) for r in rows}

    def session_turn_paths(self, session: str) -> list[tuple[str, str, str]]:
        """(id, path, scope) of a session's turns, oldest first (writer connection)."""
        rows = self.conn.execute(
            "SELECT id, path, scope FROM memories WHERE session = ? AND kind = 'turn'"
            " ORDER BY created_at, id", (session,))
        return [(r[0], r[1], r[2]) for r in rows]

    def session_scope(self, session: str) -> str | None:
        """The scope a session belongs to: its memories' (None: no memory has it yet).
        The writer's connection: a unit of work claims a session consistently."""
        row = self.conn.execute("SELECT scope FROM memories WHERE session = ? LIMIT 1",
                                  (session,)).fetchone()
        return row[0] if row else None


class _Transaction:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is not None:
            self.conn.execute("ROLLBACK")
            return
        try:
            self.conn.execute("COMMIT")
        except sqlite3.Error:  # disk full at commit: nothing of it may stay half-applied
            if self.conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self.conn.execute("ROLLBACK")
