"""graph.sqlite holds learned edges: a schema change migrates it, never wipes it."""

from __future__ import annotations

import sqlite3

from memoryd.graph import store
from memoryd.graph.store import GraphStore


def _edge_rows(path) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT a, b, relation, weight FROM edges").fetchall()


def test_a_file_from_before_migrations_keeps_its_edges(tmp_path):
    path = tmp_path / "graph.sqlite"
    with sqlite3.connect(path) as conn:  # as the first release wrote it: no user_version
        conn.executescript(store._V1)
        conn.execute("INSERT INTO meta VALUES ('schema', '1'), ('model', 'm1')")
        conn.execute("INSERT INTO edges VALUES ('n1', 'n2', 'co_occurs', 3.0, 0)")
    graph = GraphStore(path, "m1")
    assert graph.edges() == {("n1", "n2"): 3.0}
    graph.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(store.MIGRATIONS)


def test_a_new_migration_runs_once_and_keeps_the_learned_data(tmp_path, monkeypatch):
    path = tmp_path / "graph.sqlite"
    first = GraphStore(path, "m1")
    first.save_edges({("n1", "n2"): 2.0}, now=1.0)
    first.close()
    ran: list[int] = []

    def add_note_column(conn: sqlite3.Connection) -> None:
        ran.append(1)
        conn.execute("ALTER TABLE edges ADD COLUMN note TEXT")

    monkeypatch.setattr(store, "MIGRATIONS", [*store.MIGRATIONS, add_note_column])
    for _ in range(2):
        GraphStore(path, "m1").close()
    assert ran == [1], "a migration runs once"
    assert _edge_rows(path) == [("n1", "n2", "co_occurs", 2.0)]
    with sqlite3.connect(path) as conn:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(edges)")]
    assert "note" in columns


def test_an_unreadable_or_newer_file_is_rebuilt(tmp_path):
    path = tmp_path / "graph.sqlite"
    path.write_bytes(b"not a database at all" * 100)
    GraphStore(path, "m1").close()
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 99")
    graph = GraphStore(path, "m1")
    assert graph.edges() == {}
    graph.close()
