"""The catalog's entities: which entities (lang/names.py) each memory names, kept
beside its row like its tags (a superseded fact has none: it is history), and read
back as a list of the entities in some scopes, or one entity's memories over time
and the entities named beside it. A weak mention (a sentence's first word) counts
only for a key that some memory names outright."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence

import msgspec
import structlog

from memoryd.filters import Filters
from memoryd.lang.names import of_memory
from memoryd.schema import Memory
from memoryd.store.catalog_sql import decode, like_escaped, where

log = structlog.get_logger("memoryd.catalog")

TABLE = """
CREATE TABLE IF NOT EXISTS entities (mem INTEGER NOT NULL, key TEXT NOT NULL,
                                     name TEXT NOT NULL, weak INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS entities_key ON entities (key, weak, mem);
CREATE INDEX IF NOT EXISTS entities_mem ON entities (mem);
"""


class Named(msgspec.Struct):
    """An entity as a listing shows it."""

    key: str
    name: str
    memories: int  # how many of the memories read name it
    first: float  # when the first of them was made (epoch seconds)
    last: float
    aliases: list[str] = []  # multi-word names a one-word name may be short for


def write(conn: sqlite3.Connection, rowid: int, memory: Memory) -> None:
    conn.executemany("INSERT INTO entities VALUES (?, ?, ?, ?)",
                     [(rowid, e.key, e.name, int(e.weak)) for e in of_memory(memory)])


def forget(conn: sqlite3.Connection, rowid: int) -> None:
    conn.execute("DELETE FROM entities WHERE mem = ?", (rowid,))


def entities_table(conn: sqlite3.Connection) -> None:
    """The table, for catalogs made before it, filled from every current memory's
    document (it reads every row once: logged)."""
    started = time.monotonic()
    for statement in filter(str.strip, TABLE.split(";")):
        conn.execute(statement)  # not executescript: it would commit the migration
    rows = conn.execute("SELECT rowid, doc FROM memories WHERE superseded_at IS NULL")
    for rowid, doc in rows.fetchall():
        write(conn, rowid, decode(doc))
    log.info("catalog.entities_added", seconds=round(time.monotonic() - started, 3))


def entities_reread(conn: sqlite3.Connection) -> None:
    """Every current memory's entities read again, by rules that read more names than
    the table was filled by (a product in lower camel case, "Dr. Smith", "McKinsey &
    Company", "李老师", "小王", "欧阳娜娜")."""
    conn.execute("DELETE FROM entities")
    entities_table(conn)


def _counts(alias: str) -> str:
    """A row of the entities table `alias` that counts: a name outright, or a weak
    mention of a key some memory names outright."""
    return (f"({alias}.weak = 0 OR EXISTS (SELECT 1 FROM entities s"
            f" WHERE s.key = {alias}.key AND s.weak = 0))")


def _within(filters: Filters, weak_key: str | None = None) -> tuple[str, list[object]]:
    """The rows of `e` (entities joined to `m`, memories) that count and `filters`
    admits; with `weak_key`, its weak mentions count whatever else names it."""
    clauses, args = where(filters)
    counts: list[object] = []
    count = _counts("e")
    if weak_key is not None:
        count, counts = f"({count} OR e.key = ?)", [weak_key]
    return " AND ".join([count, *clauses]), [*counts, *args]


def listing(conn: sqlite3.Connection, filters: Filters, limit: int, offset: int
            ) -> tuple[list[Named], int]:
    """The entities the memories `filters` admit name, most often named first."""
    condition, args = _within(filters)
    grouped = (f"FROM entities e JOIN memories m ON m.rowid = e.mem WHERE {condition}"
               " GROUP BY e.key")
    (total,) = conn.execute(f"SELECT count(*) FROM (SELECT 1 {grouped})", args).fetchone()
    rows = conn.execute(
        f"SELECT e.key, min(e.name), count(*), min(m.created_at), max(m.created_at)"
        f" {grouped} ORDER BY count(*) DESC, e.key LIMIT ? OFFSET ?",
        [*args, limit, offset]).fetchall()
    found = [Named(*row) for row in rows]
    for entity in found:
        entity.aliases = list(_longer(conn, entity.key, condition, args).values())
    return found, total


def one(conn: sqlite3.Connection, filters: Filters, key: str, limit: int
        ) -> tuple[Named | None, list[Memory], list[Named]]:
    """The entity `key` with the multi-word names it may be short for, their newest
    `limit` memories oldest first, and the entities most often named beside them."""
    longer = _longer(conn, key, *_within(filters))
    keys = [key, *longer]
    marks = ",".join("?" * len(keys))
    # "Ann loves tea." names Ann where "Ann Smith" is a name: a weak mention of a
    # word of a longer name counts.
    condition, args = _within(filters, key if longer else None)
    named = (f"FROM entities e JOIN memories m ON m.rowid = e.mem"
             f" WHERE e.key IN ({marks}) AND {condition}")
    head = conn.execute(
        f"SELECT min(CASE WHEN e.key = ? THEN e.name END), min(e.name),"
        f" count(DISTINCT m.rowid), min(m.created_at), max(m.created_at) {named}",
        [key, *keys, *args]).fetchone()
    if not head[2]:
        return None, [], []
    entity = Named(key, head[0] or head[1], head[2], head[3], head[4],
                   list(longer.values()))
    docs = conn.execute(f"SELECT DISTINCT m.rowid, m.doc, m.created_at {named}"
                        " ORDER BY m.created_at DESC LIMIT ?", [*keys, *args, limit])
    memories = [decode(doc) for _, doc, _ in reversed(docs.fetchall())]
    beside = conn.execute(
        f"SELECT o.key, min(o.name), count(DISTINCT o.mem), min(m.created_at),"
        f" max(m.created_at) FROM entities o JOIN memories m ON m.rowid = o.mem"
        f" WHERE o.mem IN (SELECT e.mem {named}) AND o.key NOT IN ({marks})"
        f" AND {_counts('o')}"
        f" GROUP BY o.key ORDER BY count(DISTINCT o.mem) DESC, o.key LIMIT 20",
        [*keys, *args, *keys]).fetchall()
    return entity, memories, [Named(*row) for row in beside]


def _longer(conn: sqlite3.Connection, key: str, condition: str, args: Sequence[object]
            ) -> dict[str, str]:
    """The multi-word names within `condition` that start or end with the one word
    `key` ("ann" -> "Ann Smith"), by key: the names it may be short for."""
    if " " in key:
        return {}
    rows = conn.execute(
        f"SELECT e.key, min(e.name) FROM entities e JOIN memories m ON m.rowid = e.mem"
        f" WHERE (e.key LIKE ? ESCAPE '\\' OR e.key LIKE ? ESCAPE '\\') AND {condition}"
        f" GROUP BY e.key ORDER BY e.key",
        [like_escaped(key) + " %", "% " + like_escaped(key), *args]).fetchall()
    return dict(rows)
