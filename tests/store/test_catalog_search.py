"""memory_search's two query plans (scope/date filters on the narrow search_keys rows,
other filters on the memories rows) give the same pages and totals."""

from __future__ import annotations

import contextlib
import itertools
import random
import sqlite3
from datetime import UTC, datetime, timedelta

from structlog.testing import capture_logs

from memoryd.filters import Filters
from memoryd.schema import Memory, content_hash
from memoryd.store.catalog import Catalog
from memoryd.store.catalog_schema import MIGRATIONS
from memoryd.store.catalog_sql import ROWID_SLOTS, keys_only, newest, rowid_second
from memoryd.store.catalog_stamps import STAMPS_SQL

START = datetime(2025, 1, 1, tzinfo=UTC)


def _index(tmp_path) -> Catalog:
    index = Catalog(tmp_path / "k.sqlite")
    with index.transaction():
        for i in range(60):
            text = f"note {i}: the migration plan" if i % 3 else f"note {i}: lunch"
            memory = Memory(id=f"m{i:02d}", content=text, content_hash=content_hash(text),
                            scope="global" if i % 4 else "agent:x", phase="organized",
                            category="knowledge", created_at=START + timedelta(hours=i))
            index.writer.upsert(memory, f"categories/knowledge/m{i:02d}.md", "sha")
    return index


def test_pages_and_totals_agree_across_both_plans(tmp_path):
    index = _index(tmp_path)
    narrow = Filters(scopes=["global"])
    wide = Filters(scopes=["global"], phase="organized")  # forces the memories plan
    assert keys_only(narrow) and not keys_only(wide)
    expected = [f"m{i:02d}" for i in reversed(range(60)) if i % 3 and i % 4]
    for filters in (narrow, wide):
        pages = [index.reader.search("migration", filters, 10, offset) for offset in (0, 10, 20)]
        assert [m.id for page, _ in pages for m in page] == expected
        assert {total for _, total in pages} == {len(expected)}
        assert index.reader.search("migration", filters, 10, 500) == ([], len(expected))
        assert index.reader.search("nothing-like-it", filters, 10, 0) == ([], 0)
    since = Filters(scopes=["global", "agent:x"], since=START + timedelta(hours=50),
                    until=START + timedelta(hours=55))
    found, total = index.reader.search("migration", since, 10, 0)
    assert [m.id for m in found] == ["m53", "m52", "m50"] and total == 3
    index.writer.delete("m53")
    assert index.reader.search("migration", since, 10, 0)[1] == 2  # deleted with its keys
    index.close()


def test_lookups_by_many_ids_go_in_chunks(tmp_path, monkeypatch):
    index = _index(tmp_path)
    monkeypatch.setattr("memoryd.store.catalog_sql.ID_CHUNK", 7)  # SQLite's cap is 32,766
    ids = [f"m{i:02d}" for i in range(60)]
    assert sorted(m.id for m in index.reader.get_many(ids)) == ids
    assert sorted(m.id for m in index.writer.load([*ids, "missing"])) == ids
    index.close()


def test_list_pages_agree_across_both_plans(tmp_path):
    index = _index(tmp_path)
    everything = [f"m{i:02d}" for i in reversed(range(60))]
    for scopes, expected in ((["global", "agent:x"], everything),
                             (["agent:x"], [m for m in everything if int(m[1:]) % 4 == 0]),
                             (None, everything)):
        for filters in (Filters(scopes=scopes), Filters(scopes=scopes, phase="organized")):
            pages = [index.reader.list_memories(filters, 7, offset) for offset in range(0, 70, 7)]
            assert [m.id for page, _ in pages for m in page] == expected
            assert {total for _, total in pages} == {len(expected)}
    dated = Filters(scopes=["global", "agent:x"], since=START + timedelta(hours=10),
                    until=START + timedelta(hours=13))
    assert [m.id for m in index.reader.list_memories(dated, 10, 0)[0]] == ["m12", "m11", "m10"]
    assert index.reader.list_memories(dated, 10, 0)[1] == 3
    index.close()


def test_short_terms_come_from_the_word_index(tmp_path):
    """1-2 character terms, numbers and single CJK characters: found at the start of a
    word (a CJK character anywhere) through the word index, not by reading every row."""
    index = Catalog(tmp_path / "k.sqlite")
    texts = {"go": "Go 1.22 is out", "ago": "we left 5 days ago", "cjk": "会议在东京举行",
             "sharp": "c# and f# code", "version": "version 42b shipped",
             "plus": "x + y", "filler": "nothing to see here"}
    with index.transaction():
        for i, (key, text) in enumerate(texts.items()):
            memory = Memory(id=key, content=text, content_hash=content_hash(text),
                            created_at=START + timedelta(hours=i), tags=["db"] * (key == "ago"))
            index.writer.upsert(memory, f"inbox/{key}.md", "sha")
        for i in range(2000):  # enough rows that a scan is plain to see
            text = f"filler note {'hijklmnpqrstuvw'[i % 15]}{i // 15:b} about the weekly plan"
            index.writer.upsert(Memory(id=f"f{i}", content=text, content_hash=content_hash(text),
                                created_at=START), f"inbox/f{i}.md", "sha")

    def found(query: str) -> list[str]:
        return sorted(m.id for m in index.reader.search(query, Filters(), 50, 0)[0])

    assert found("go") == ["go"], "a word's start, not inside 'ago'"
    assert found("5") == ["ago"] and found("42") == ["version"]
    assert found("东") == ["cjk"] and found("东京") == ["cjk"] and found("京举") == ["cjk"]
    assert found("c#") == ["sharp"] and found("db") == ["ago"]  # tags too
    assert found("go out") == ["go"] and found("Go 1") == ["go"]
    assert found("+") == ["plus"]  # no letter or digit: LIKE alone
    assert found("x") == ["plus"]

    def steps(query: str) -> int:
        count = 0

        def tick() -> int:
            nonlocal count
            count += 1
            return 0

        index.reader.conn.set_progress_handler(tick, 100)
        found(query)
        index.reader.conn.set_progress_handler(None, 100)
        return count

    assert steps("5") * 10 < steps("+"), "the word index, not a pass over every row"
    with index.transaction():
        text = "Rust 1.80 is out"
        index.writer.upsert(Memory(id="go", content=text, content_hash=content_hash(text),
                            created_at=START), "inbox/go.md", "sha")
        index.writer.delete("cjk")
    assert found("go") == [] and found("东") == [] and found("1") == ["go"]
    index.close()


def test_a_walk_newest_first_matches_a_full_sort(tmp_path):
    """Pages come from walking the match by rowid (creation second) and stopping: the
    same pages and totals as sorting every match, with many memories to a second,
    writes out of order, rewrites that move a memory, and dates that are and are not
    whole seconds."""
    rng = random.Random(7)
    index = Catalog(tmp_path / "k.sqlite")
    seconds = [START + timedelta(seconds=rng.randrange(40)) for _ in range(12)]
    truth: dict[str, tuple[datetime, str, str]] = {}
    with index.transaction():
        for i in range(400):
            created = rng.choice(seconds) + timedelta(microseconds=rng.choice([0, 0, 250, 999_999]))
            if i % 50 == 0:  # beyond the numbered range: the edge seconds
                created = datetime(1500 + (i % 100) * 8, 1, 1, tzinfo=UTC)
            text = " ".join(rng.sample(["plan", "lunch", "deploy", "13", "14 x"], 2))
            scope = rng.choice(["global", "agent:x", "agent:y"])
            memory_id = f"m{rng.randrange(300):03d}"  # some ids written twice: a rewrite
            index.writer.upsert(Memory(id=memory_id, content=text, content_hash=content_hash(text),
                                scope=scope, created_at=created), f"inbox/{memory_id}.md", "sha")
            truth[memory_id] = (created, text, scope)
        index.writer.delete(next(iter(truth)))
        truth.pop(next(iter(truth)))
    rows = index.reader.conn.execute("SELECT rowid, created_at FROM memories").fetchall()
    assert all(r // ROWID_SLOTS == rowid_second(c) for r, c in rows)
    rowid = dict(index.reader.conn.execute("SELECT id, rowid FROM memories").fetchall())

    def expected(term: str, scopes, since, until) -> list[str]:
        found = [(c, rowid[m]) for m, (c, text, scope) in truth.items()
                 if term in text.split() and (scopes is None or scope in scopes)
                 and (since is None or c >= since) and (until is None or c < until)]
        return [m for _, r in sorted(found, reverse=True) for m in truth if rowid[m] == r]

    for scopes in (None, ["global"], ["agent:y", "agent:x"], ["global", "global"], []):
        kept = sum(1 for _, _, scope in truth.values() if scopes is None or scope in scopes)
        # the kept counts
        assert index.reader.list_memories(Filters(scopes=scopes), 5, 0)[1] == kept
    dates = [None, seconds[3], seconds[5] + timedelta(microseconds=300)]
    for term in ("plan", "13", "deploy"):
        for scopes in (None, ["global"], ["global", "agent:x", "agent:y"]):
            for since, until in itertools.product(dates, dates):
                for extra in ({}, {"phase": "inbox"}):  # both join tables
                    filters = Filters(scopes=scopes, since=since, until=until, **extra)
                    want = expected(term, scopes, since, until)
                    pages = [index.reader.search(term, filters, 7, offset) for offset in (0, 7, 30)]
                    assert [m.id for m in pages[0][0] + pages[1][0]] == want[:14]
                    assert [m.id for m in pages[2][0]] == want[30:37]
                    assert {total for _, total in pages} == {len(want)}
    index.close()


def test_the_walk_reads_one_page_and_the_rest_of_its_last_second():
    second = ROWID_SLOTS
    rows = [(5 * second + 2, 5.9), (5 * second + 1, 5.1), (5 * second, 5.5),
            (4 * second + 1, 4.2), (4 * second, 4.7), (3 * second, 3.0), (2 * second, 2.0)]
    read = []

    def walk():
        for row in rows:
            read.append(row)
            yield row

    assert newest(walk(), 4) == [5 * second + 2, 5 * second, 5 * second + 1, 4 * second]
    assert len(read) == 6, "the second of the fourth row, then one row to see it end"
    assert newest(iter(rows[:2]), 5) == [5 * second + 2, 5 * second + 1]
    assert newest(walk(), 0) == [] and len(read) == 7, "none asked, one row read"


def test_every_kind_of_match_is_walked_in_rowid_order(tmp_path):
    """No query sorts its matches (SQLite's temp b-tree), whatever its terms, filters
    and join: the walk's order is the index's."""
    index = _index(tmp_path)
    text = "c# plan 13 migration 东 a+b"  # every query below finds it, in every filter
    with index.transaction():
        index.writer.upsert(Memory(id="all", content=text, content_hash=content_hash(text),
                            scope="agent:x", phase="organized", created_at=START),
                     "inbox/all.md", "sha")
    plans: list[str] = []

    def trace(sql: str) -> None:
        if sql.startswith("SELECT") and "ORDER BY" in sql:
            plans.append(sql)

    index.reader.conn.set_trace_callback(trace)
    for query in ("migration", "13", "13 migration", "c# plan", "东", "+"):
        for filters in (Filters(), Filters(scopes=["agent:x"], since=START),
                        Filters(phase="organized")):
            index.reader.search(query, filters, 10, 0)
    index.reader.conn.set_trace_callback(None)
    assert len(plans) == 18
    for sql in plans:
        plan = " ".join(r[3] for r in index.reader.conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
        assert "TEMP B-TREE" not in plan, (sql, plan)
    index.close()



def test_the_stamps_read_as_one_string_are_each_files(tmp_path):
    """Catalog.stamps reads every row's stamp as one joined string: paths with odd
    characters and rows without a stamp come back as they were written."""
    index = Catalog(tmp_path / "k.sqlite")
    assert index.writer.stamps() == {}
    paths = {"categories/knowledge/a.md": "12:1700000000123456789:42",
             "categories/knowledge/line\nbreak ü.md": "3:1:7",
             "sessions/s 1/turns/t.md": None}
    with index.transaction():
        for n, (path, stamp) in enumerate(paths.items()):
            text = f"note {n}"
            memory = Memory(id=f"s{n}", content=text, content_hash=content_hash(text),
                            phase="organized", category="knowledge", created_at=START)
            index.writer.upsert(memory, path, "sha", stamp)
    assert index.writer.stamps() == paths


def test_counts_by_phase_category_kind_and_scope_from_one_pass(tmp_path):
    index = _index(tmp_path)
    with index.transaction():
        for i, (kind, category, phase) in enumerate([("reminder", "reminders", "organized"),
                                                     ("note", "inbox", "inbox")]):
            memory = Memory(id=f"x{i}", content=f"other {i}", content_hash=content_hash(
                f"other {i}"), kind=kind, category=category, phase=phase, scope="agent:y",
                created_at=START)
            index.writer.upsert(memory, f"categories/{category}/x{i}.md", "sha")
        gone = Memory(id="old", content="history", content_hash=content_hash("history"),
                      phase="organized", category="knowledge", created_at=START,
                      superseded_at=START)  # history: not counted
        index.writer.upsert(gone, "trash/categories/knowledge/old.md", "sha")
    assert index.reader.counts() == {
        "memories": 62, "by_phase": {"inbox": 1, "organized": 61},
        "by_category": {"inbox": 1, "knowledge": 60, "reminders": 1},
        "by_kind": {"note": 61, "reminder": 1},
        "by_scope": {"agent:x": 15, "agent:y": 2, "global": 45}}
    assert index.reader.counts(["agent:y", "nowhere"]) == {
        "memories": 2, "by_phase": {"inbox": 1, "organized": 1},
        "by_category": {"inbox": 1, "reminders": 1}, "by_kind": {"note": 1, "reminder": 1},
        "by_scope": {"agent:y": 2}}
    assert index.reader.counts([])["memories"] == 0


def _segments(index: Catalog) -> dict[str, int]:
    return {table: index.reader.conn.execute(
        f"SELECT count(DISTINCT segid) FROM {table}_idx").fetchone()[0]
        for table in ("fts", "words")}


def test_a_transactions_writes_reach_each_full_text_index_as_one_segment(tmp_path):
    """No statement of a write opens a statement journal (a trigger would): opening one
    makes FTS5 write out the terms it holds, a segment for every write, to be merged."""
    index = _index(tmp_path)  # 60 writes in one transaction
    assert _segments(index) == {"fts": 1, "words": 1}
    index.close()


def test_a_catalog_with_the_old_count_triggers_drops_them_and_counts_once(tmp_path):
    index = _index(tmp_path)
    index.writer.conn.executescript("""
        CREATE TRIGGER search_keys_added AFTER INSERT ON search_keys BEGIN
            INSERT INTO scope_counts VALUES (new.scope, 1)
            ON CONFLICT (scope) DO UPDATE SET n = n + 1;
        END;
        CREATE TRIGGER search_keys_removed AFTER DELETE ON search_keys BEGIN
            UPDATE scope_counts SET n = n - 1 WHERE scope = old.scope;
            DELETE FROM scope_counts WHERE scope = old.scope AND n = 0;
        END;
        PRAGMA user_version = 1;""")  # as a catalog of schema 10 written before had them
    index.close()
    index = Catalog(tmp_path / "k.sqlite")
    assert not index.was_reset
    assert index.reader.conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'"
                                ).fetchall() == []
    with index.transaction():
        index.writer.upsert(Memory(id="new", content="one more", content_hash=content_hash(
            "one more"), scope="agent:z", created_at=START), "inbox/new.md", "sha")
        index.writer.delete("m01")  # global
    assert index.reader.list_memories(Filters(scopes=["agent:z"]), 5, 0)[1] == 1
    assert index.reader.list_memories(Filters(scopes=["global"]), 5, 0)[1] == 44
    assert index.reader.list_memories(Filters(scopes=None), 5, 0)[1] == 60
    index.writer.delete("new")
    assert index.reader.conn.execute(
        "SELECT scope FROM scope_counts ORDER BY scope").fetchall() == [
        ("agent:x",), ("global",)]
    index.close()


def _stamps_plan(index: Catalog) -> str:
    """On a connection of its own: a connection's cached EXPLAIN misses a schema change."""
    with contextlib.closing(sqlite3.connect(index.path)) as conn:
        return " ".join(str(row[-1]) for row in conn.execute(
            f"EXPLAIN QUERY PLAN {STAMPS_SQL}").fetchall())


def test_start_ups_stamps_are_read_from_their_index_and_an_older_catalog_gets_it(tmp_path):
    """The stamps come from a narrow index, not the rows that carry each document (after
    a reboot, 1.7 s against 0.03 s at 100,000); a catalog made before it gains it."""
    index = _index(tmp_path)
    index.writer.set_stamp("categories/knowledge/m07.md", "12:34:56")
    assert "COVERING INDEX memories_stamps" in _stamps_plan(index)
    index.writer.conn.executescript("DROP INDEX memories_stamps; PRAGMA user_version = 1;"
                                    )  # as a catalog made before it: its first migration
    assert "COVERING INDEX" not in _stamps_plan(index)
    index.close()
    with capture_logs() as logs:
        index = Catalog(tmp_path / "k.sqlite")
    assert not index.was_reset
    assert [e["index"] for e in logs if e["event"] == "catalog.index_added"] == [
        "memories_stamps"]
    assert "COVERING INDEX memories_stamps" in _stamps_plan(index)
    index.close()
    with capture_logs() as logs:  # once
        index = Catalog(tmp_path / "k.sqlite")
    assert not [e for e in logs if e["event"] == "catalog.index_added"]
    stamps = index.writer.stamps()
    assert len(stamps) == 60 and stamps["categories/knowledge/m07.md"] == "12:34:56"
    assert stamps["categories/knowledge/m08.md"] is None  # upserted without a stamp
    index.close()


def test_a_catalog_of_a_newer_memoryd_is_made_anew_and_says_so(tmp_path):
    """More migrations than this memoryd knows: its rows may mean what this one cannot
    read, so the catalog is set aside and filled from the files again (it is derived),
    with a warning that names why; an older one migrates in place, its rows kept."""
    index = _index(tmp_path)
    index.writer.conn.execute("PRAGMA user_version = 99")
    index.close()
    with capture_logs() as logs:
        index = Catalog(tmp_path / "k.sqlite")
    assert index.was_reset and index.reader.count_rows() == 0
    (warning,) = [e for e in logs if e["event"] == "catalog.too_new"]
    assert "99" in warning["problem"] and warning["log_level"] == "warning"
    with index.writer.transaction():
        index.writer.upsert(Memory(id="kept", content="kept", content_hash=content_hash(
            "kept"), created_at=START), "inbox/kept.md", "sha")
    index.writer.conn.execute("PRAGMA user_version = 0")  # before every migration
    index.close()
    with capture_logs() as logs:
        index = Catalog(tmp_path / "k.sqlite")
    assert not index.was_reset and index.reader.count_rows() == 1
    assert [(e["schema_from"], e["schema_to"]) for e in logs
            if e["event"] == "catalog.migrated"] == [(0, len(MIGRATIONS))]
    index.close()


def test_an_older_catalog_learns_the_lines_it_ingested_from_its_rows(tmp_path):
    """The table of ingested transcript lines, added to a catalog made before it: every
    ingested memory's line is in it, and stays when the memory goes."""
    index = _index(tmp_path)
    with index.writer.transaction():
        index.writer.upsert(Memory(id="t1", content="hi", content_hash=content_hash("hi"),
                                   created_at=START, source="ingest:codex",
                                   source_path="s.jsonl#7"), "inbox/t1.md", "sha")
    index.writer.conn.execute("DROP TABLE lines")
    index.writer.conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) - 1}")
    index.close()
    index = Catalog(tmp_path / "k.sqlite")
    assert index.reader.known_lines("ingest:codex") == {"s.jsonl#7"}
    with index.writer.transaction():
        index.writer.delete("t1")
    assert index.reader.known_lines("ingest:codex", "s.jsonl#") == {"s.jsonl#7"}
    assert not index.writer.trash_lines_read()
    index.writer.remember_lines([("ingest:codex", "s.jsonl#9")])
    assert index.writer.trash_lines_read()
    assert index.reader.known_lines("ingest:codex") == {"s.jsonl#7", "s.jsonl#9"}
    index.close()
