"""GraphStore: the topic graph on disk, `index/graph.sqlite` (derived, rebuildable).

Nodes, episodes and their vectors can all be rebuilt from the turn files (each turn
records its `episode` and `topic`). Co-occurrence edges are learned from retrieval
and live only here: they survive restarts and a rebuild of the nodes (node ids come
from the files), and are lost only with the file itself.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

import msgspec
import numpy as np
import structlog

from memoryd.store import sqlite

log = structlog.get_logger("memoryd.graph")

_V1 = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS nodes (
    id TEXT PRIMARY KEY, scope TEXT NOT NULL, label TEXT NOT NULL,
    created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS episodes (
    id TEXT PRIMARY KEY, node TEXT NOT NULL, scope TEXT NOT NULL, turns TEXT NOT NULL,
    label TEXT NOT NULL, importance REAL NOT NULL, vector BLOB NOT NULL,
    created_at REAL NOT NULL, seq INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS episodes_node ON episodes (node, seq);
CREATE TABLE IF NOT EXISTS edges (
    a TEXT NOT NULL, b TEXT NOT NULL, relation TEXT NOT NULL, weight REAL NOT NULL,
    updated_at REAL NOT NULL, PRIMARY KEY (a, b, relation));
"""


def _v1(conn: sqlite3.Connection) -> None:
    """The first schema (IF NOT EXISTS: a file from before migrations keeps its rows)."""
    for statement in _V1.split(";"):
        if statement.strip():
            conn.execute(statement)


# The co-occurrence edges are learned, not derivable from the files: a schema change is
# a new function here (ALTER TABLE...), never a rebuild that drops them.
MIGRATIONS: list[sqlite.Migration] = [_v1]


class Node(msgspec.Struct):
    """A topic: a cluster of episodes. Its centroid is the running mean of its members'
    vectors (kept as their sum, so joins and removals are exact)."""

    id: str
    scope: str
    label: str
    created_at: float
    members: list[str] = msgspec.field(default_factory=list)  # episode ids, join order
    total: np.ndarray | None = None

    @property
    def centroid(self) -> np.ndarray:
        assert self.total is not None and self.members
        return self.total / len(self.members)


class Episode(msgspec.Struct):
    """A long-term episode: a user turn and its reply (or a lone turn), one vector."""

    id: str
    scope: str
    turns: list[str]
    label: str
    importance: float
    vector: np.ndarray
    created_at: float
    node: str = ""
    seq: int = 0


class GraphStore:
    def __init__(self, path: Path, model: str) -> None:
        self.path = path
        self.model = model
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        existed = path.exists()
        self.conn: sqlite3.Connection  # set below, or by _recreate
        try:
            self.conn = self._connect()
            before, after = sqlite.migrate(self.conn, MIGRATIONS)
            if existed and before != after:
                log.info("graph.migrated", path=str(path), schema_from=before, schema_to=after)
        except (sqlite3.DatabaseError, sqlite.TooNew) as exc:  # unreadable, or from a newer
            if existed:
                log.warning("graph.rebuilding", path=str(path), reason=str(exc)[:200])
            self._recreate()
        model_was = self._meta("model")
        if model_was is None:
            with self.conn:
                self._set_meta("model", model)
        elif model_was != model:
            # Episode vectors of another model: nodes are re-embedded from the files;
            # edges join node ids, which the files keep, so they stay.
            log.info("graph.model_changed", was=model_was, now=model)
            with self.conn:
                self.conn.execute("DELETE FROM nodes")
                self.conn.execute("DELETE FROM episodes")
                self._set_meta("model", model)

    def _connect(self) -> sqlite3.Connection:
        return sqlite.connect(self.path)

    def _meta(self, key: str) -> str | None:
        try:
            row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        except sqlite3.DatabaseError:
            return None
        return row[0] if row else None

    def _set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def _recreate(self) -> None:
        """A new, empty file; the engine's reconcile fills it from the turn files."""
        opened: sqlite3.Connection | None = getattr(self, "conn", None)
        if opened is not None:  # none when the file could not even be opened
            opened.close()
        sqlite.remove(self.path)
        self.conn = self._connect()
        sqlite.migrate(self.conn, MIGRATIONS)

    def close(self) -> None:
        self.conn.close()

    # -- reads -------------------------------------------------------------------------
    def replace_text(self, text: str, replacement: str) -> int:
        """`text` out of every label (a purge: labels are words of the turns), the file
        rewritten without the old ones; how many labels held it."""
        with self.conn:
            changed = sum(self.conn.execute(
                f"UPDATE {table} SET label = replace(label, ?, ?) WHERE instr(label, ?) > 0",
                (text, replacement, text)).rowcount for table in ("nodes", "episodes"))
        self.conn.execute("VACUUM")
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return changed

    def nodes(self) -> list[Node]:
        rows = self.conn.execute("SELECT id, scope, label, created_at FROM nodes")
        return [Node(r[0], r[1], r[2], r[3]) for r in rows]

    def episodes(self) -> list[Episode]:
        rows = self.conn.execute(
            "SELECT id, node, scope, turns, label, importance, vector, created_at, seq"
            " FROM episodes ORDER BY seq")
        return [Episode(id=r[0], node=r[1], scope=r[2], turns=r[3].split(","), label=r[4],
                        importance=r[5], vector=_vector(r[6]), created_at=r[7], seq=r[8])
                for r in rows]

    def edges(self) -> dict[tuple[str, str], float]:
        rows = self.conn.execute("SELECT a, b, weight FROM edges WHERE relation = 'co_occurs'")
        return {(r[0], r[1]): r[2] for r in rows}

    # -- writes ------------------------------------------------------------------------
    def save(self, nodes: Iterable[Node], dropped_nodes: Iterable[str],
             episodes: Iterable[Episode], dropped_episodes: Iterable[str]) -> None:
        """One transaction: changed nodes and episodes written, dropped ones removed
        (with the edges of dropped nodes)."""
        with self.conn:
            for node_id in dropped_nodes:
                self.conn.execute("DELETE FROM nodes WHERE id = ?", (node_id,))
                self.conn.execute("DELETE FROM edges WHERE a = ? OR b = ?", (node_id, node_id))
            self.conn.executemany("DELETE FROM episodes WHERE id = ?",
                                  [(e,) for e in dropped_episodes])
            self.conn.executemany(
                "INSERT OR REPLACE INTO nodes VALUES (?, ?, ?, ?)",
                [(n.id, n.scope, n.label, n.created_at) for n in nodes])
            self.conn.executemany(
                "INSERT OR REPLACE INTO episodes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(e.id, e.node, e.scope, ",".join(e.turns), e.label, e.importance,
                  _blob(e.vector), e.created_at, e.seq) for e in episodes])

    def save_edges(self, edges: dict[tuple[str, str], float], now: float) -> None:
        with self.conn:
            self.conn.executemany(
                "INSERT INTO edges VALUES (?, ?, 'co_occurs', ?, ?) ON CONFLICT (a, b,"
                " relation) DO UPDATE SET weight = excluded.weight,"
                " updated_at = excluded.updated_at",
                [(a, b, w, now) for (a, b), w in edges.items()])


def _blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def _vector(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32).copy()
