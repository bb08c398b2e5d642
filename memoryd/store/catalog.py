"""Catalog: SQLite under index/ — the catalog of memories and their FTS5 text.

Derived from the files and rebuildable at any time: each row records the file's
path and sha256, so reconciliation can tell which files changed, and its stamp (size,
mtime, inode), so start-up can tell without reading them. Every committed change
bumps the catalog's generation and marks the rows it wrote with it: the corpus
snapshot (retrieval/snapshot.py) records the generation it reflects, and start-up
catches up on the rows written since. A catalog created afresh gets a new epoch,
so no snapshot of an older one is ever trusted. The FTS table
uses the trigram tokenizer: case-insensitive substring matching that also works
for scripts without spaces (Chinese, Japanese).

Its schema and migrations are in catalog_schema.py; what it compiles from values (the
filter's WHERE clause, a search's FTS5 match, rowids by creation second) in
catalog_sql.py.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec
import structlog
from msgspec.structs import replace

from memoryd.filters import Filters
from memoryd.schema import Memory
from memoryd.store import sqlite
from memoryd.store.catalog_schema import (
    MIGRATIONS,
    OLD_TRIGGERS,
    SCHEMA,
    SCHEMA_VERSION,
    STAMPS,
    STAMPS_INDEX,
)
from memoryd.store.catalog_sql import (
    EXPIRED,
    ROWID_SLOTS,
    UNEXPIRED,
    Match,
    by_ids,
    decode,
    keys_only,
    newest,
    rowid_bounds,
    rowid_second,
    spaced,
    where,
)
from memoryd.store.walk import STAMPS_SQL

log = structlog.get_logger("memoryd.catalog")



_encode = msgspec.json.Encoder().encode


_RECORD = "id, path, file_sha, scope, stamp"  # FileRecord's columns


@dataclass(frozen=True)
class FileRecord:
    id: str
    path: str
    file_sha: str
    scope: str
    stamp: str | None = None


class Catalog:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.existed = path.exists()  # False on a fresh root: created, not "rebuilt"
        self._rebuilt = False
        self.writer: sqlite3.Connection  # set below, or by _reset
        try:
            self.writer = self._connect()
            current = self._schema_version() == SCHEMA_VERSION
        except sqlite3.DatabaseError:  # a corrupted or foreign file: rebuild it
            current = False
        if not current:
            self._reset()
        try:
            before, after = sqlite.migrate(self.writer, MIGRATIONS)
        except sqlite.TooNew:  # a newer memoryd's: derived, so made again for this one
            self._reset()
            before = after = len(MIGRATIONS)
        if before != after:
            log.info("catalog.migrated", schema_from=before, schema_to=after)
        for trigger in OLD_TRIGGERS:
            self.writer.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        self._add_stamps_index()
        self.epoch, self.generation = self._generation()
        self._readers: dict[int, sqlite3.Connection] = {}  # by thread
        self._readers_lock = threading.Lock()
        self._mine = threading.local()
        # Point reads by id take microseconds: the event loop's thread does them on a
        # connection of its own (WAL readers never wait for the writer).
        self.inline = self._connect()

    @property
    def was_reset(self) -> bool:
        """An existing catalog was unreadable or of an older schema, and is rebuilt."""
        return self._rebuilt and self.existed

    @property
    def reader(self) -> sqlite3.Connection:
        """This thread's reader connection: reads run in parallel, one connection a
        thread (WAL readers never wait for the writer). Opening one closes those of
        threads that have ended."""
        conn = getattr(self._mine, "reader", None)
        if conn is None:
            conn = self._mine.reader = self._connect()
            with self._readers_lock:
                alive = {t.ident for t in threading.enumerate()}
                for ident in [i for i in self._readers if i not in alive]:
                    self._readers.pop(ident).close()
                self._readers[threading.get_ident()] = conn
        return conn

    def _connect(self) -> sqlite3.Connection:
        return sqlite.connect(self.path, autocommit=True)

    def _schema_version(self) -> str | None:
        try:
            row = self.writer.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        except sqlite3.DatabaseError:
            return None
        return row[0] if row else None

    def _add_stamps_index(self) -> None:
        """`STAMPS_INDEX` on a catalog made before it (logged: it reads every row once)."""
        if self.writer.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?",
                               (STAMPS,)).fetchone():
            return
        started = time.monotonic()
        self.writer.execute(STAMPS_INDEX)
        log.info("catalog.index_added", index=STAMPS,
                 seconds=round(time.monotonic() - started, 3))

    def _generation(self) -> tuple[str, int]:
        meta = dict(self.writer.execute(
            "SELECT key, value FROM meta WHERE key IN ('epoch', 'generation')").fetchall())
        return meta["epoch"], int(meta["generation"])

    def _reset(self) -> None:
        self._rebuilt = True
        opened: sqlite3.Connection | None = getattr(self, "writer", None)
        if opened is not None:  # none when the file could not even be opened
            opened.close()
        sqlite.remove(self.path)
        self.writer = self._connect()
        self.writer.executescript(SCHEMA)
        self.writer.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
        self.writer.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [
            ("schema", SCHEMA_VERSION), ("epoch", os.urandom(8).hex()), ("generation", "0")])

    def close(self) -> None:
        self.inline.close()
        with self._readers_lock:
            for conn in self._readers.values():
                conn.close()
            self._readers.clear()
        self.writer.close()

    # -- writes (writer connection, one thread at a time) ---------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One commit: a new generation, which the rows it writes carry."""
        before = self.generation
        try:
            with _Transaction(self.writer) as conn:
                self.generation += 1
                conn.execute("UPDATE meta SET value = ? WHERE key = 'generation'",
                             (str(self.generation),))
                yield conn
        except BaseException:
            self.generation = before
            raise

    def upsert(self, memory: Memory, path: str, sha: str, stamp: str | None = None) -> None:
        conn = self.writer
        old = conn.execute("SELECT rowid FROM memories WHERE id = ? OR path = ?",
                           (memory.id, path)).fetchall()
        for (rowid,) in old:
            self._delete_rowid(rowid)
        rowid = self._free_rowid(memory.created_at.timestamp())
        conn.execute(
            "INSERT INTO memories (rowid, id, path, file_sha, stamp, gen, content_hash, kind,"
            " phase, category, type, scope, session, source, source_path, created_at,"
            " updated_at, expires_at, due_at, notified, episode, topic, access_count,"
            " superseded_at, pending, compressed, doc)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                rowid, memory.id, path, sha, stamp, self.generation, memory.content_hash,
                memory.kind, memory.phase, memory.category, memory.type, memory.scope,
                memory.session, memory.source,
                memory.source_path,
                memory.created_at.timestamp(), memory.updated_at.timestamp(),
                memory.expires_at.timestamp() if memory.expires_at else None,
                memory.due_at.timestamp() if memory.due_at else None,
                int(memory.notified_at is not None), memory.episode, memory.topic,
                memory.access_count,
                memory.superseded_at.timestamp() if memory.superseded_at else None,
                int(memory.pending), int(memory.compressed), _encode(memory),
            ),
        )
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

    def _free_rowid(self, created_at: float) -> int:
        """The next rowid of the memory's creation second (see ROWID_SLOTS)."""
        first = rowid_second(created_at) * ROWID_SLOTS
        # <= the second's last rowid: the last second's end (2**63) is past SQLite's range
        (last,) = self.writer.execute("SELECT max(rowid) FROM memories WHERE rowid >= ?"
                                      " AND rowid <= ?", (first, first + ROWID_SLOTS - 1)
                                      ).fetchone()
        rowid = first if last is None else last + 1
        if rowid >= first + ROWID_SLOTS:
            raise RuntimeError(f"{ROWID_SLOTS} memories created in one second")
        return rowid

    def _delete_rowid(self, rowid: int) -> None:
        conn = self.writer
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
        conn.execute("DELETE FROM links WHERE src = ?", (mem_id,))
        conn.execute("DELETE FROM memories WHERE rowid = ?", (rowid,))

    def delete(self, memory_id: str) -> None:
        row = self.writer.execute("SELECT rowid FROM memories WHERE id = ?",
                                  (memory_id,)).fetchone()
        if row:
            self._delete_rowid(row[0])

    def delete_path(self, path: str) -> str | None:
        row = self.writer.execute("SELECT rowid, id FROM memories WHERE path = ?",
                                  (path,)).fetchone()
        if not row:
            return None
        self._delete_rowid(row[0])
        return str(row[1])

    # -- reads used by the writer thread (consistent with its own writes) -----
    def record_by_path(self, path: str) -> FileRecord | None:
        row = self.writer.execute(f"SELECT {_RECORD} FROM memories WHERE path = ?",
                                  (path,)).fetchone()
        return FileRecord(*row) if row else None

    def checkpoint(self) -> None:
        """Every commit so far durable in the database file (the WAL is fsync'd only
        at checkpoints: synchronous=NORMAL)."""
        self.writer.execute("PRAGMA wal_checkpoint(FULL)")

    def set_stamp(self, path: str, stamp: str) -> None:
        """The file at `path` is as indexed, with a new stamp (touched, copied back)."""
        self.writer.execute("UPDATE memories SET stamp = ? WHERE path = ?", (stamp, path))

    def stamps(self) -> dict[str, str | None]:
        """Path -> the stamp its file had when indexed (start-up's cheap check). Read
        as one string: read a row at a time, each of 130,000 steps gives the interpreter
        lock back, and at start-up the threads reading the snapshot take it each time
        (0.7-0.9 s there, 0.2 s alone)."""
        (joined,) = self.writer.execute(STAMPS_SQL).fetchone()
        fields = joined.split("\0") if joined else []
        return {path: mark or None for path, mark in zip(fields[::2], fields[1::2], strict=True)}

    def ids(self) -> set[str]:
        return {r[0] for r in self.writer.execute("SELECT id FROM memories")}

    def id_count(self) -> int:
        """`len(ids())`, as the writer sees them, without reading them."""
        return int(self.writer.execute("SELECT count(*) FROM memories").fetchone()[0])

    def written_since(self, generation: int) -> list[Memory]:
        """The memories whose rows a commit after `generation` wrote."""
        # `+created_at`: the generation index finds the few rows; ordering by the
        # created_at index instead walked every row (0.2 s at 100k, at every start).
        rows = self.writer.execute("SELECT doc FROM memories WHERE gen > ? ORDER BY "
                                   "+created_at, id", (generation,))
        return [decode(r[0]) for r in rows]

    def record_by_id(self, memory_id: str) -> FileRecord | None:
        row = self.writer.execute(f"SELECT {_RECORD} FROM memories WHERE id = ?",
                                  (memory_id,)).fetchone()
        return FileRecord(*row) if row else None

    def all_records(self) -> dict[str, FileRecord]:
        rows = self.writer.execute(f"SELECT {_RECORD} FROM memories")
        return {r[1]: FileRecord(*r) for r in rows}

    def load(self, ids: Iterable[str]) -> list[Memory]:
        """Memories by id, on the writer's connection (sees its own uncommitted rows)."""
        return by_ids(self.writer, list(ids))

    def all_memories(self) -> list[Memory]:
        rows = self.writer.execute("SELECT doc FROM memories ORDER BY created_at, id")
        return [decode(r[0]) for r in rows]

    def find_duplicate(self, content_hash: str, scope: str, kind: str) -> str | None:
        """A memory of the same kind with the same content in the same scope (a reminder
        and a note with the same words are different memories)."""
        row = self.writer.execute(
            "SELECT id FROM memories WHERE content_hash = ? AND scope = ? AND +kind = ?"
            " AND superseded_at IS NULL LIMIT 1", (content_hash, scope, kind)).fetchone()
        return row[0] if row else None

    # -- reads (reader connection, one thread at a time) ----------------------
    def get(self, memory_id: str) -> Memory | None:
        """By id, on the event loop's thread (its own connection)."""
        row = self.inline.execute("SELECT doc FROM memories WHERE id = ?",
                                  (memory_id,)).fetchone()
        return decode(row[0]) if row else None

    def ids_with_prefix(self, prefix: str, limit: int = 2) -> list[str]:
        """Ids starting with `prefix`, the id itself first when it exists (an index range
        on the primary key; event loop's connection)."""
        rows = self.inline.execute(
            "SELECT id FROM memories WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
            (prefix, prefix + "\U0010ffff", limit)).fetchall()
        return [r[0] for r in rows]

    def get_many(self, ids: Iterable[str]) -> list[Memory]:
        return by_ids(self.reader, list(ids))

    def located(self, memory_id: str) -> tuple[Memory, str] | None:
        """A memory and its file's path (reader connection)."""
        row = self.reader.execute("SELECT doc, path FROM memories WHERE id = ?",
                                  (memory_id,)).fetchone()
        return (decode(row[0]), row[1]) if row else None

    def list_memories(self, filters: Filters, limit: int, offset: int) -> tuple[list[Memory], int]:
        if keys_only(filters):
            return self._list_keys(filters, limit, offset)
        clauses, args = where(filters)
        condition = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        total = self.reader.execute(f"SELECT count(*) FROM memories m {condition}",
                                    args).fetchone()
        rows = self.reader.execute(
            f"SELECT m.doc FROM memories m {condition} ORDER BY m.created_at DESC, m.id"
            " LIMIT ? OFFSET ?", [*args, limit, offset])
        return [decode(r[0]) for r in rows], total[0]

    def search(self, query: str, filters: Filters, limit: int,
               offset: int) -> tuple[list[Memory], int]:
        """One page of the memories matching `query`, newest first, and how many match.

        The match is walked by rowid, newest second first, and the walk stops after the
        page (`newest`). Filters on scope and dates join the narrow search_keys rows,
        the others the memories rows (CROSS JOIN: the match drives). The text index
        holds no superseded fact, so no `as_of`: smart search answers what was known."""
        if filters.as_of is not None:
            raise ValueError("a keyword search sees what is current only (no as_of)")
        match = Match.of(query)
        keys = "k" if keys_only(filters) else "m"
        bounds, bound_args, rest = rowid_bounds(match.table, filters)
        if rest.scopes is not None and self._every_scope_in(rest.scopes):
            rest = replace(rest, scopes=None)
        clauses, args = where(rest, keys, rowid=f"{match.table}.rowid")
        condition = " AND ".join([*match.where, *bounds, *clauses])
        args = [*match.args, *bound_args, *args]
        joined = (f"FROM {match.table} CROSS JOIN {'search_keys' if keys == 'k' else 'memories'}"
                  f" {keys} ON {keys}.rowid = {match.table}.rowid WHERE {condition}")
        # With no clause left but expiry (tested on the match's rowids), the match is
        # counted alone, no row looked up for each: unless compressed memories, which
        # the text index holds and search_keys does not, could be among it.
        alone = keys == "k" and len(clauses) == 1 and not self._any_compressed()
        counted = f"FROM {match.table} WHERE {condition}" if alone else joined
        total = self.reader.execute(f"SELECT count(*) {counted}", args).fetchone()[0]
        if offset >= total:
            return [], total
        with contextlib.closing(self.reader.execute(
                f"SELECT {keys}.rowid, {keys}.created_at {joined}"
                f" ORDER BY {match.table}.rowid DESC", args)) as rows:
            found = newest(rows, offset + limit)
        return self._docs(found[offset:]), total

    def _any_compressed(self) -> bool:
        return self.reader.execute(
            "SELECT 1 FROM memories WHERE compressed = 1 LIMIT 1").fetchone() is not None

    def _every_scope_in(self, scopes: Sequence[str]) -> bool:
        """Whether every scope that holds a memory is one of `scopes`: then a scope
        filter excludes nothing."""
        return set(scopes).issuperset(
            r[0] for r in self.reader.execute("SELECT scope FROM scope_counts"))

    def _list_keys(self, filters: Filters, limit: int, offset: int
                   ) -> tuple[list[Memory], int]:
        """Newest first by scope and dates alone (memory_list's usual call): each scope's
        newest offset + limit from the (scope, created_at) index, merged here. SQLite
        cannot walk several scopes of one index in order; sorting them all costs 150 ms
        at 100k."""
        scopes = None if filters.scopes is None else list(dict.fromkeys(filters.scopes))
        if filters.since is None and filters.until is None:
            # The kept counts, less the expired memories that still have their keys.
            within = "" if scopes is None else f"scope IN ({','.join('?' * len(scopes))})"
            total = self.reader.execute(
                "SELECT coalesce(sum(n), 0) FROM scope_counts"
                + (f" WHERE {within}" if within else ""), scopes or []).fetchone()[0]
            total -= self.reader.execute(
                f"SELECT count(*) FROM search_keys WHERE rowid IN ({EXPIRED})"
                + (f" AND {within}" if within else ""),
                [filters.at(), *(scopes or [])]).fetchone()[0]
        else:
            clauses, args = where(filters, "k")
            total = self.reader.execute(
                f"SELECT count(*) FROM search_keys k WHERE {' AND '.join(clauses)}",
                args).fetchone()[0]
        dates = where(Filters(since=filters.since, until=filters.until, now=filters.now), "k")
        date_sql = "".join(f" AND {c}" for c in dates[0])
        order = " ORDER BY k.created_at DESC, k.rowid DESC LIMIT ?"
        if scopes is None:
            rows = self.reader.execute(
                f"SELECT k.rowid, k.created_at FROM search_keys k WHERE 1{date_sql}{order}"
                " OFFSET ?", [*dates[1], limit, offset]).fetchall()
        else:
            newest = [self.reader.execute(
                f"SELECT k.rowid, k.created_at FROM search_keys k WHERE k.scope = ?{date_sql}"
                f"{order}", [scope, *dates[1], offset + limit]).fetchall()
                for scope in scopes]
            merged = heapq.merge(*newest, key=lambda r: (-r[1], -r[0]))
            rows = list(itertools.islice(merged, offset, offset + limit))
        return self._docs([r[0] for r in rows]), total

    def _docs(self, rowids: list[int]) -> list[Memory]:
        """Memories by rowid, in the order given."""
        if not rowids:
            return []
        docs = dict(self.reader.execute(
            f"SELECT rowid, doc FROM memories WHERE rowid IN ({','.join('?' * len(rowids))})",
            rowids).fetchall())
        return [decode(docs[r]) for r in rowids if r in docs]

    # -- what the lifecycle jobs look for --------------------------------------------
    def expired_inbox(self, now: float) -> list[tuple[str, str]]:
        """(id, path) of inbox memories whose TTL has passed."""
        rows = self.reader.execute(
            "SELECT id, path FROM memories WHERE phase = 'inbox' AND expires_at IS NOT NULL"
            " AND expires_at < ? ORDER BY expires_at", (now,))
        return [(r[0], r[1]) for r in rows]

    def unaccessed_organized(self, created_before: float) -> list[tuple[str, str]]:
        """(id, path) of organized notes created before the cut-off and never accessed
        (per their files; the caller adds accesses still in the stats buffer)."""
        rows = self.reader.execute(
            "SELECT id, path FROM memories WHERE phase = 'organized'"
            " AND kind NOT IN ('turn', 'fact', 'summary')"
            " AND access_count = 0 AND created_at < ? ORDER BY created_at", (created_before,))
        return [(r[0], r[1]) for r in rows]

    def inbox_access_counts(self) -> dict[str, tuple[str, int]]:
        """id -> (path, access_count in its file) for every inbox memory."""
        rows = self.reader.execute(
            "SELECT id, path, access_count FROM memories WHERE phase = 'inbox'")
        return {r[0]: (r[1], r[2]) for r in rows}

    def _where(self, condition: str, *args: object) -> list[Memory]:
        """Memories matching an SQL condition (and order), on the reader connection."""
        rows = self.reader.execute(f"SELECT doc FROM memories WHERE {condition}", args)
        return [decode(r[0]) for r in rows]

    def due_reminders(self, now: float) -> list[Memory]:
        """Reminders due by `now` that were not announced yet, oldest due first."""
        return self._where("kind = 'reminder' AND notified = 0 AND due_at IS NOT NULL"
                           " AND due_at <= ? ORDER BY due_at", now)

    def upcoming_reminders(self, limit: int) -> list[Memory]:
        """Reminders not announced yet, soonest first."""
        return self._where("kind = 'reminder' AND notified = 0 AND due_at IS NOT NULL"
                           f" ORDER BY due_at LIMIT {int(limit)}")

    def announced_reminders(self) -> list[Memory]:
        """Reminders already announced and not deleted: what pending.md lists."""
        return self._where("kind = 'reminder' AND notified = 1 ORDER BY due_at DESC")

    def notes(self) -> list[Memory]:
        """Every current memory but conversation turns and session summaries."""
        return self._where("kind NOT IN ('turn', 'summary') AND superseded_at IS NULL"
                           " ORDER BY created_at, id")

    def unswept_turns(self) -> list[Memory]:
        """Conversation turns not yet in an episode, by scope, session and time."""
        return self._where("kind = 'turn' AND episode IS NULL"
                           " ORDER BY scope, session, created_at, id")

    def episode_turns(self) -> dict[str, tuple[str, str | None]]:
        """turn id -> (episode, topic) for every turn in an episode, as the files say
        (writer connection: the graph is reconciled in the writer thread)."""
        rows = self.writer.execute(
            "SELECT id, episode, topic FROM memories WHERE kind = 'turn'"
            " AND episode IS NOT NULL")
        return {r[0]: (r[1], r[2]) for r in rows}

    # -- conversation memory -----------------------------------------------------------
    def pending_turns(self, limit: int) -> list[Memory]:
        """Turns whose background work is still to do, oldest first."""
        return self._where("pending = 1 ORDER BY created_at, id LIMIT ?", limit)

    def count_pending(self) -> int:
        return int(self.reader.execute("SELECT count(*) FROM memories WHERE pending = 1"
                                       ).fetchone()[0])

    def recent_turns(self, per_session: int) -> list[Memory]:
        """The last `per_session` turns of every session, oldest first."""
        return self._where(
            "rowid IN (SELECT rowid FROM (SELECT rowid, row_number() OVER (PARTITION BY"
            " session ORDER BY created_at DESC, id DESC) AS n FROM memories WHERE"
            " kind = 'turn') WHERE n <= ?) ORDER BY created_at, id", per_session)

    def session_turn_paths(self, session: str) -> list[tuple[str, str, str]]:
        """(id, path, scope) of a session's turns, oldest first (writer connection)."""
        rows = self.writer.execute(
            "SELECT id, path, scope FROM memories WHERE session = ? AND kind = 'turn'"
            " ORDER BY created_at, id", (session,))
        return [(r[0], r[1], r[2]) for r in rows]

    def session_scope(self, session: str) -> str | None:
        """The scope a session belongs to: its memories' (None: no memory has it yet).
        The writer's connection: a unit of work claims a session consistently."""
        row = self.writer.execute("SELECT scope FROM memories WHERE session = ? LIMIT 1",
                                  (session,)).fetchone()
        return row[0] if row else None

    def session_memories(self, session: str, kind: str) -> list[Memory]:
        """A session's current memories of one kind, oldest first."""
        return self._where("session = ? AND kind = ? AND superseded_at IS NULL"
                           " ORDER BY created_at, id", session, kind)

    def uncompressed_sessions(self) -> list[tuple[str, str, float]]:
        """(scope, session, first turn's time) of every session with turns not yet
        compressed, oldest first."""
        rows = self.reader.execute(
            "SELECT scope, session, min(created_at) FROM memories WHERE kind = 'turn'"
            " AND compressed = 0 AND session IS NOT NULL GROUP BY scope, session"
            " ORDER BY min(created_at), session")
        return [(r[0], r[1], r[2]) for r in rows]

    def ingested(self, source: str) -> dict[str, tuple[str, str, frozenset[str]]]:
        """source_path -> (id, content_hash, tags) of the current memories ingested
        from `source` (an `ingest:<name>`)."""
        rows = self.reader.execute(
            "SELECT m.source_path, m.id, m.content_hash, group_concat(t.tag, char(10))"
            " FROM memories m LEFT JOIN tags t ON t.mem = m.rowid WHERE m.source = ?"
            " AND m.source_path IS NOT NULL AND m.superseded_at IS NULL GROUP BY m.rowid",
            (source,))
        return {path: (memory_id, digest, frozenset(tags.split("\n") if tags else ()))
                for path, memory_id, digest, tags in rows}

    def export_page(self, after: str, limit: int, *, superseded: bool, expired: bool,
                    now: float) -> list[tuple[str, str, bytes]]:
        """(id, path, doc) of up to `limit` memories with ids after `after`, by id:
        compressed turns too (an export is a backup); `superseded`: the facts held as
        history under trash/; `expired`: the memories expired at `now`, which the expire
        job will move to the trash."""
        clauses: list[str] = [] if superseded else ["path NOT LIKE 'trash/%'"]
        args: list[object] = []
        if not expired:
            clauses.append(UNEXPIRED)
            args.append(now)
        condition = "".join(f" AND {c}" for c in clauses)
        return self.reader.execute(
            f"SELECT id, path, doc FROM memories m WHERE id > ?{condition} ORDER BY id"
            " LIMIT ?", (after, *args, limit)).fetchall()

    def backlinks(self, memory_id: str) -> list[str]:
        rows = self.reader.execute("SELECT DISTINCT src FROM links WHERE dst = ?", (memory_id,))
        return [r[0] for r in rows]

    def count_rows(self) -> int:
        """Every memory the catalog holds, history included (an export's size)."""
        return int(self.reader.execute("SELECT count(*) FROM memories").fetchone()[0])

    def counts(self, scopes: Sequence[str] | None = None) -> dict[str, object]:
        """Totals by phase, category, kind and scope (of these scopes; None: all), from
        one pass over the rows: each pass reads every row's document (five took 0.77 s
        at 130,000, one 0.28 s)."""
        where, args = " WHERE superseded_at IS NULL", list(scopes or ())
        if scopes is not None:
            where += f" AND scope IN ({','.join('?' * len(args))})" if args else " AND 0"
        columns = ("phase", "category", "kind", "scope")
        by: dict[str, dict[str, int]] = {column: {} for column in columns}
        total = 0
        for *values, n in self.reader.execute(
                f"SELECT {', '.join(columns)}, count(*) FROM memories{where}"
                f" GROUP BY {', '.join(columns)}", args):
            total += n
            for column, value in zip(columns, values, strict=True):
                by[column][value] = by[column].get(value, 0) + n
        return {"memories": total,
                **{f"by_{k}": dict(sorted(v.items())) for k, v in by.items()}}


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
            raise
