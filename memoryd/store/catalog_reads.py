"""The catalog's queries, on a connection the caller chose (Catalog hands them out):
a thread's reader connection for anything that may take a while, or the event
loop's own for point reads by id. Readers never wait for the writer (WAL) and see
its last commit, never its rows in flight."""

from __future__ import annotations

import contextlib
import heapq
import itertools
import sqlite3
from collections.abc import Iterable, Sequence

from msgspec.structs import replace

from memoryd.filters import Filters
from memoryd.schema import Memory
from memoryd.store import catalog_entities
from memoryd.store.catalog_sql import (
    EXPIRED,
    UNEXPIRED,
    Match,
    by_ids,
    decode,
    keys_only,
    newest,
    paths_by_ids,
    rowid_bounds,
    where,
)

# memory_list's orders, by the catalog's columns (the newest first walks an index; the
# others sort what the filter admits).
ORDERS = {"newest": "m.created_at DESC", "oldest": "m.created_at ASC",
          "updated": "m.updated_at DESC", "accessed": "m.access_count DESC"}


class Reader:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def get(self, memory_id: str) -> Memory | None:
        """By id, on the event loop's thread (its own connection)."""
        row = self.conn.execute("SELECT doc FROM memories WHERE id = ?",
                                  (memory_id,)).fetchone()
        return decode(row[0]) if row else None

    def ids_with_prefix(self, prefix: str, limit: int = 2) -> list[str]:
        """Ids starting with `prefix`, the id itself first when it exists (an index range
        on the primary key; event loop's connection)."""
        rows = self.conn.execute(
            "SELECT id FROM memories WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
            (prefix, prefix + "\U0010ffff", limit)).fetchall()
        return [r[0] for r in rows]

    def get_many(self, ids: Iterable[str]) -> list[Memory]:
        return by_ids(self.conn, list(ids))

    def located(self, memory_id: str) -> tuple[Memory, str] | None:
        """A memory and its file's path (reader connection)."""
        row = self.conn.execute("SELECT doc, path FROM memories WHERE id = ?",
                                  (memory_id,)).fetchone()
        return (decode(row[0]), row[1]) if row else None

    def paths_of(self, ids: Iterable[str]) -> dict[str, str]:
        """Each of these memories' file path, where the catalog has it."""
        return paths_by_ids(self.conn, ids)

    def list_memories(self, filters: Filters, limit: int, offset: int,
                      order: str = "newest") -> tuple[list[Memory], int]:
        """One page of the memories `filters` admit, in `order` (ORDERS), and how many
        there are."""
        if order == "newest" and keys_only(filters):
            return self._list_keys(filters, limit, offset)
        clauses, args = where(filters)
        condition = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        total = self.conn.execute(f"SELECT count(*) FROM memories m {condition}",
                                    args).fetchone()
        rows = self.conn.execute(
            f"SELECT m.doc FROM memories m {condition} ORDER BY {ORDERS[order]}, m.id"
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
        total = self.conn.execute(f"SELECT count(*) {counted}", args).fetchone()[0]
        if offset >= total:
            return [], total
        with contextlib.closing(self.conn.execute(
                f"SELECT {keys}.rowid, {keys}.created_at {joined}"
                f" ORDER BY {match.table}.rowid DESC", args)) as rows:
            found = newest(rows, offset + limit)
        return self._docs(found[offset:]), total

    def _any_compressed(self) -> bool:
        return self.conn.execute(
            "SELECT 1 FROM memories WHERE compressed = 1 LIMIT 1").fetchone() is not None

    def _every_scope_in(self, scopes: Sequence[str]) -> bool:
        """Whether every scope that holds a memory is one of `scopes`: then a scope
        filter excludes nothing."""
        return set(scopes).issuperset(
            r[0] for r in self.conn.execute("SELECT scope FROM scope_counts"))

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
            total = self.conn.execute(
                "SELECT coalesce(sum(n), 0) FROM scope_counts"
                + (f" WHERE {within}" if within else ""), scopes or []).fetchone()[0]
            total -= self.conn.execute(
                f"SELECT count(*) FROM search_keys WHERE rowid IN ({EXPIRED})"
                + (f" AND {within}" if within else ""),
                [filters.at(), *(scopes or [])]).fetchone()[0]
        else:
            clauses, args = where(filters, "k")
            total = self.conn.execute(
                f"SELECT count(*) FROM search_keys k WHERE {' AND '.join(clauses)}",
                args).fetchone()[0]
        dates = where(Filters(since=filters.since, until=filters.until, now=filters.now), "k")
        date_sql = "".join(f" AND {c}" for c in dates[0])
        order = " ORDER BY k.created_at DESC, k.rowid DESC LIMIT ?"
        if scopes is None:
            rows = self.conn.execute(
                f"SELECT k.rowid, k.created_at FROM search_keys k WHERE 1{date_sql}{order}"
                " OFFSET ?", [*dates[1], limit, offset]).fetchall()
        else:
            newest = [self.conn.execute(
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
        docs = dict(self.conn.execute(
            f"SELECT rowid, doc FROM memories WHERE rowid IN ({','.join('?' * len(rowids))})",
            rowids).fetchall())
        return [decode(docs[r]) for r in rowids if r in docs]

    def expired_inbox(self, now: float) -> list[tuple[str, str]]:
        """(id, path) of inbox memories whose TTL has passed."""
        rows = self.conn.execute(
            "SELECT id, path FROM memories WHERE phase = 'inbox' AND expires_at IS NOT NULL"
            " AND expires_at < ? ORDER BY expires_at", (now,))
        return [(r[0], r[1]) for r in rows]

    def unaccessed_organized(self, created_before: float) -> list[tuple[str, str]]:
        """(id, path) of organized notes created before the cut-off and never accessed
        (per their files; the caller adds accesses still in the stats buffer)."""
        rows = self.conn.execute(
            "SELECT id, path FROM memories WHERE phase = 'organized'"
            " AND kind NOT IN ('turn', 'fact', 'summary')"
            " AND access_count = 0 AND created_at < ? ORDER BY created_at", (created_before,))
        return [(r[0], r[1]) for r in rows]

    def inbox_access_counts(self) -> dict[str, tuple[str, int]]:
        """id -> (path, access_count in its file) for every inbox memory."""
        rows = self.conn.execute(
            "SELECT id, path, access_count FROM memories WHERE phase = 'inbox'")
        return {r[0]: (r[1], r[2]) for r in rows}

    def _where(self, condition: str, *args: object) -> list[Memory]:
        """Memories matching an SQL condition (and order), on the reader connection."""
        rows = self.conn.execute(f"SELECT doc FROM memories WHERE {condition}", args)
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

    def pending_turns(self, limit: int) -> list[Memory]:
        """Turns whose background work is still to do, oldest first."""
        return self._where("pending = 1 ORDER BY created_at, id LIMIT ?", limit)

    def count_pending(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM memories WHERE pending = 1"
                                       ).fetchone()[0])

    def recent_turns(self, per_session: int) -> list[Memory]:
        """The last `per_session` turns of every session, oldest first."""
        return self._where(
            "rowid IN (SELECT rowid FROM (SELECT rowid, row_number() OVER (PARTITION BY"
            " session ORDER BY created_at DESC, id DESC) AS n FROM memories WHERE"
            " kind = 'turn') WHERE n <= ?) ORDER BY created_at, id", per_session)

    def session_memories(self, session: str, kind: str) -> list[Memory]:
        """A session's current memories of one kind, oldest first."""
        return self._where("session = ? AND kind = ? AND superseded_at IS NULL"
                           " ORDER BY created_at, id", session, kind)

    def uncompressed_sessions(self) -> list[tuple[str, str, float]]:
        """(scope, session, first turn's time) of every session with turns not yet
        compressed, oldest first."""
        rows = self.conn.execute(
            "SELECT scope, session, min(created_at) FROM memories WHERE kind = 'turn'"
            " AND compressed = 0 AND session IS NOT NULL GROUP BY scope, session"
            " ORDER BY min(created_at), session")
        return [(r[0], r[1], r[2]) for r in rows]

    def ingested(self, source: str, prefix: str = ""
                 ) -> dict[str, tuple[str, str, frozenset[str]]]:
        """source_path -> (id, content_hash, tags) of the current memories ingested
        from `source` (an `ingest:<name>`), of the paths that start with `prefix`."""
        rows = self.conn.execute(
            "SELECT m.source_path, m.id, m.content_hash, group_concat(t.tag, char(10))"
            " FROM memories m LEFT JOIN tags t ON t.mem = m.rowid WHERE m.source = ?"
            " AND m.source_path IS NOT NULL AND m.superseded_at IS NULL"
            " AND substr(m.source_path, 1, ?) = ? GROUP BY m.rowid",
            (source, len(prefix), prefix))
        return {path: (memory_id, digest, frozenset(tags.split("\n") if tags else ()))
                for path, memory_id, digest, tags in rows}

    def known_lines(self, source: str, prefix: str = "") -> set[str]:
        """Every `<file>#<line id>` ever stored from `source` whose path starts with
        `prefix`, wherever its memory went since (catalog_schema.LINES)."""
        rows = self.conn.execute(
            "SELECT path FROM lines WHERE source = ? AND substr(path, 1, ?) = ?",
            (source, len(prefix), prefix))
        return {path for (path,) in rows}

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
        return self.conn.execute(
            f"SELECT id, path, doc FROM memories m WHERE id > ?{condition} ORDER BY id"
            " LIMIT ?", (after, *args, limit)).fetchall()

    def entities(self, filters: Filters, limit: int, offset: int
                 ) -> tuple[list[catalog_entities.Named], int]:
        """catalog_entities.listing."""
        return catalog_entities.listing(self.conn, filters, limit, offset)

    def entity(self, filters: Filters, key: str, limit: int
               ) -> tuple[catalog_entities.Named | None, list[Memory],
                          list[catalog_entities.Named]]:
        """catalog_entities.one."""
        return catalog_entities.one(self.conn, filters, key, limit)

    def link_pairs(self) -> list[tuple[str, str, str, str]]:
        """Every link between two live memories: (source, target, their scopes)."""
        return list(self.conn.execute(
            "SELECT l.src, l.dst, a.scope, b.scope FROM links l "
            "JOIN memories a ON a.id = l.src JOIN memories b ON b.id = l.dst "
            "WHERE a.superseded_at IS NULL AND b.superseded_at IS NULL"))

    def backlinks(self, memory_id: str) -> list[str]:
        rows = self.conn.execute("SELECT DISTINCT src FROM links WHERE dst = ?", (memory_id,))
        return [r[0] for r in rows]

    def count_rows(self) -> int:
        """Every memory the catalog holds, history included (an export's size)."""
        return int(self.conn.execute("SELECT count(*) FROM memories").fetchone()[0])

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
        for *values, n in self.conn.execute(
                f"SELECT {', '.join(columns)}, count(*) FROM memories{where}"
                f" GROUP BY {', '.join(columns)}", args):
            total += n
            for column, value in zip(columns, values, strict=True):
                by[column][value] = by[column].get(value, 0) + n
        return {"memories": total,
                **{f"by_{k}": dict(sorted(v.items())) for k, v in by.items()}}
