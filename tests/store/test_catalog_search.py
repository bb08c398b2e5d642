"""memory_search's two query plans (scope/date filters on the narrow search_keys rows,
other filters on the memories rows) give the same pages and totals."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memoryd.schema import Memory, content_hash
from memoryd.store.catalog import Catalog, Filters

START = datetime(2025, 1, 1, tzinfo=UTC)


def _index(tmp_path) -> Catalog:
    index = Catalog(tmp_path / "k.sqlite")
    with index.transaction():
        for i in range(60):
            text = f"note {i}: the migration plan" if i % 3 else f"note {i}: lunch"
            memory = Memory(id=f"m{i:02d}", content=text, content_hash=content_hash(text),
                            scope="global" if i % 4 else "agent:x", phase="organized",
                            category="knowledge", created_at=START + timedelta(hours=i))
            index.upsert(memory, f"categories/knowledge/m{i:02d}.md", "sha")
    return index


def test_pages_and_totals_agree_across_both_plans(tmp_path):
    index = _index(tmp_path)
    narrow = Filters(scopes=["global"])
    wide = Filters(scopes=["global"], phase="organized")  # forces the memories plan
    assert narrow.keys_only and not wide.keys_only
    expected = [f"m{i:02d}" for i in reversed(range(60)) if i % 3 and i % 4]
    for filters in (narrow, wide):
        pages = [index.search("migration", filters, 10, offset) for offset in (0, 10, 20)]
        assert [m.id for page, _ in pages for m in page] == expected
        assert {total for _, total in pages} == {len(expected)}
        assert index.search("migration", filters, 10, 500) == ([], len(expected))
        assert index.search("nothing-like-it", filters, 10, 0) == ([], 0)
    since = Filters(scopes=["global", "agent:x"], since=START + timedelta(hours=50),
                    until=START + timedelta(hours=55))
    found, total = index.search("migration", since, 10, 0)
    assert [m.id for m in found] == ["m53", "m52", "m50"] and total == 3
    index.delete("m53")
    assert index.search("migration", since, 10, 0)[1] == 2  # deleted with its keys
    index.close()


def test_lookups_by_many_ids_go_in_chunks(tmp_path, monkeypatch):
    index = _index(tmp_path)
    monkeypatch.setattr("memoryd.store.catalog.ID_CHUNK", 7)  # SQLite's cap is 32,766
    ids = [f"m{i:02d}" for i in range(60)]
    assert sorted(m.id for m in index.get_many(ids)) == ids
    assert sorted(m.id for m in index.load([*ids, "missing"])) == ids
    index.close()


def test_list_pages_agree_across_both_plans(tmp_path):
    index = _index(tmp_path)
    everything = [f"m{i:02d}" for i in reversed(range(60))]
    for scopes, expected in ((["global", "agent:x"], everything),
                             (["agent:x"], [m for m in everything if int(m[1:]) % 4 == 0]),
                             (None, everything)):
        for filters in (Filters(scopes=scopes), Filters(scopes=scopes, phase="organized")):
            pages = [index.list(filters, 7, offset) for offset in range(0, 70, 7)]
            assert [m.id for page, _ in pages for m in page] == expected
            assert {total for _, total in pages} == {len(expected)}
    dated = Filters(scopes=["global", "agent:x"], since=START + timedelta(hours=10),
                    until=START + timedelta(hours=13))
    assert [m.id for m in index.list(dated, 10, 0)[0]] == ["m12", "m11", "m10"]
    assert index.list(dated, 10, 0)[1] == 3
    index.close()
