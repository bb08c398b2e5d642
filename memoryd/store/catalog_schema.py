"""The catalog's SQL schema: its tables, indexes and registered migrations (a catalog
made anew has the schema they lead to; an older one migrates in place, store/sqlite.py)."""

from __future__ import annotations

import sqlite3
import time

import structlog

from memoryd.store import sqlite
from memoryd.store.catalog_entities import TABLE as ENTITIES
from memoryd.store.catalog_entities import entities_reread, entities_table

log = structlog.get_logger("memoryd.catalog")

SCHEMA_VERSION = "10"

# Start-up's stamps (catalog_stamps.py) are read from this index, not from the memories
# rows, which carry each document: after a reboot, with nothing of the file in the page
# cache, reading them from the rows means reading every document from disk.
STAMPS = "memories_stamps"
STAMPS_INDEX = f"CREATE INDEX IF NOT EXISTS {STAMPS} ON memories (path, stamp);"

# What a read needs to leave out the memories that are not live (filters.py) without
# reading every row: the few expired ones, and whether any is compressed at all.
LIVE_INDEXES = """
CREATE INDEX IF NOT EXISTS memories_expires ON memories (expires_at)
    WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_compressed ON memories (compressed) WHERE compressed = 1;
"""

# Every line of another tool's transcript stored here (its `ingest:<name>` source and
# `<file>#<line id>`), kept when the turn is evicted, compressed or deleted: a line
# known once is never stored again, wherever its turn went since. What the trash holds
# is read into it when the catalog is made anew (FileSync.startup), so it too is
# derived from the files.
LINES = """
CREATE TABLE IF NOT EXISTS lines (source TEXT NOT NULL, path TEXT NOT NULL,
    PRIMARY KEY (source, path)) WITHOUT ROWID;
"""

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS memories (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL UNIQUE,
    file_sha TEXT NOT NULL,
    stamp TEXT,  -- the file's size:mtime_ns:inode when indexed (files.stamp)
    gen INTEGER NOT NULL DEFAULT 0,  -- the catalog generation that last wrote the row
    content_hash TEXT NOT NULL,
    kind TEXT NOT NULL, phase TEXT NOT NULL, category TEXT NOT NULL, type TEXT NOT NULL,
    scope TEXT NOT NULL, session TEXT, source TEXT NOT NULL, source_path TEXT,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, expires_at REAL,
    due_at REAL, notified INTEGER NOT NULL DEFAULT 0,
    episode TEXT, topic TEXT,
    access_count INTEGER NOT NULL,
    superseded_at REAL, pending INTEGER NOT NULL DEFAULT 0, compressed INTEGER NOT NULL DEFAULT 0,
    doc BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS memories_scope_created ON memories (scope, created_at);
CREATE INDEX IF NOT EXISTS memories_created ON memories (created_at);
CREATE INDEX IF NOT EXISTS memories_hash ON memories (content_hash, scope);
CREATE INDEX IF NOT EXISTS memories_type ON memories (type, scope);
CREATE INDEX IF NOT EXISTS memories_episode ON memories (kind, episode);
CREATE INDEX IF NOT EXISTS memories_session ON memories (session, kind, created_at);
CREATE INDEX IF NOT EXISTS memories_source_path ON memories (source, source_path)
    WHERE source_path IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_gen ON memories (gen);
CREATE INDEX IF NOT EXISTS memories_pending ON memories (pending) WHERE pending = 1;
{STAMPS_INDEX}
{LIVE_INDEXES}
CREATE TABLE IF NOT EXISTS tags (mem INTEGER NOT NULL, tag TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS tags_tag ON tags (tag, mem);
CREATE INDEX IF NOT EXISTS tags_mem ON tags (mem);
CREATE TABLE IF NOT EXISTS links (src TEXT NOT NULL, dst TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS links_dst ON links (dst);
CREATE INDEX IF NOT EXISTS links_src ON links (src);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5 (content, tags, tokenize = 'trigram');
-- Words (CJK characters one word each), for the terms trigrams cannot find: an index
-- only (contentless); rows are deleted by giving back the values they were indexed with.
-- Its terms are 1-2 characters, always prefixes: each word's first 1 and 2 characters
-- are indexed too, so "13*" reads one list, not those of every word from 13 to 13999.
CREATE VIRTUAL TABLE IF NOT EXISTS words USING fts5 (
    content, tags, content = '', tokenize = 'unicode61 remove_diacritics 0',
    prefix = '1 2');
-- What a search filters and sorts on most often, one narrow row per memory (same rowid):
-- a match joins here, not to the wide memories row that carries the document. Only the
-- memories a read sees by default have one: not superseded, not compressed.
CREATE TABLE IF NOT EXISTS search_keys (
    rowid INTEGER PRIMARY KEY, scope TEXT NOT NULL, created_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS search_keys_scope ON search_keys (scope, created_at);
CREATE INDEX IF NOT EXISTS search_keys_created ON search_keys (created_at);
-- How many search_keys rows each scope has (rows are only ever inserted and deleted):
-- memory_list's total without counting 130,000 index entries (7 ms). Kept by the
-- statements that insert and delete search_keys rows, not by triggers (no_count_triggers).
CREATE TABLE IF NOT EXISTS scope_counts (scope TEXT PRIMARY KEY, n INTEGER NOT NULL)
    WITHOUT ROWID;
{ENTITIES}
{LINES}
"""

def live_keys(conn: sqlite3.Connection) -> None:
    """search_keys rows for the memories a default read sees only (no compressed turn
    has one any more), and the indexes that leave out the expired."""
    for statement in filter(str.strip, LIVE_INDEXES.split(";")):
        conn.execute(statement)
    conn.execute("DELETE FROM search_keys WHERE rowid IN"
                 " (SELECT rowid FROM memories WHERE compressed = 1)")
    conn.execute("DELETE FROM scope_counts")
    conn.execute("INSERT INTO scope_counts SELECT scope, count(*) FROM search_keys"
                 " GROUP BY scope")


def stamps_index(conn: sqlite3.Connection) -> None:
    """STAMPS_INDEX, for catalogs made before it (it reads every row once: logged)."""
    started = time.monotonic()
    conn.execute(STAMPS_INDEX)
    log.info("catalog.index_added", index=STAMPS, seconds=round(time.monotonic() - started, 3))


def no_count_triggers(conn: sqlite3.Connection) -> None:
    """Catalogs made before this kept scope_counts by triggers. A statement that fires
    a trigger opens a statement journal, and opening one makes FTS5 write out what it
    holds in memory: every write flushed its terms of both full-text indexes as a
    segment of its own, to be merged later. The statements that insert and delete
    search_keys rows keep the counts instead."""
    for trigger in ("search_keys_added", "search_keys_removed"):
        conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")


def lines_table(conn: sqlite3.Connection) -> None:
    """LINES, filled from the memories indexed now (the trash is read at start-up)."""
    conn.execute(LINES)  # one statement (executescript would commit the migration's)
    conn.execute("INSERT OR IGNORE INTO lines SELECT source, source_path FROM memories"
                 " WHERE source LIKE 'ingest:%' AND source_path IS NOT NULL")
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('lines', 'live')")


# The catalog's registered migrations (store/sqlite.py), in order: a catalog made anew
# has the schema they lead to and is marked as having had them all. A change to the
# schema is a new function at the end (never an edit of one that has run somewhere).
MIGRATIONS: tuple[sqlite.Migration, ...] = (live_keys, stamps_index, no_count_triggers,
                                            entities_table, entities_reread, lines_table)
