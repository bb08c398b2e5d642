"""The catalog's entities: written and removed with each memory's row, none for a
superseded fact, weak mentions counted only for a name held outright, aliases shown,
and a catalog made before the table gets it filled from its rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from structlog.testing import capture_logs

from memoryd.filters import Filters
from memoryd.schema import Memory, content_hash
from memoryd.store.catalog import Catalog

START = datetime(2025, 1, 1, tzinfo=UTC)


def _put(index: Catalog, memory_id: str, text: str, hours: int = 0, **fields) -> None:
    with index.transaction():
        index.writer.upsert(Memory(id=memory_id, content=text, content_hash=content_hash(text),
                                   created_at=START + timedelta(hours=hours), **fields),
                            f"inbox/{memory_id}.md", "sha")


def _listed(index: Catalog, filters: Filters | None = None) -> dict[str, tuple[str, int]]:
    found, total = index.reader.entities(filters or Filters(), 100, 0)
    assert total == len(found)
    return {e.key: (e.name, e.memories) for e in found}


def test_entities_follow_each_write_update_and_delete(tmp_path):
    index = Catalog(tmp_path / "k.sqlite")
    _put(index, "a", "I met Ann Smith at the Bank of America.")
    _put(index, "b", "Later I called Ann Smith about Lisbon.", hours=1)
    assert _listed(index) == {"ann smith": ("Ann Smith", 2), "bank of america":
                              ("Bank of America", 1), "lisbon": ("Lisbon", 1)}
    _put(index, "b", "Later I called Tom about Porto.", hours=1)  # an update
    assert _listed(index) == {"ann smith": ("Ann Smith", 1), "bank of america":
                              ("Bank of America", 1), "tom": ("Tom", 1), "porto": ("Porto", 1)}
    with index.transaction():
        index.writer.delete("a")
    assert _listed(index) == {"tom": ("Tom", 1), "porto": ("Porto", 1)}
    _put(index, "c", "I moved to Berlin with Tom.", hours=2, superseded_at=START)
    assert _listed(index) == {"tom": ("Tom", 1), "porto": ("Porto", 1)}  # history: none


def test_a_weak_mention_counts_where_the_name_is_held_outright(tmp_path):
    index = Catalog(tmp_path / "k.sqlite")
    _put(index, "a", "Painting is fun. Ann loves tea.")
    assert _listed(index) == {}
    _put(index, "b", "I went to the market with Ann.", hours=1)
    assert _listed(index) == {"ann": ("Ann", 2)}


def test_one_entity_its_memories_over_time_its_aliases_and_what_is_named_beside_it(tmp_path):
    index = Catalog(tmp_path / "k.sqlite")
    _put(index, "a", "I met Ann Smith in Lisbon.", hours=0)
    _put(index, "b", "Ann loves the tiles of Porto.", hours=1)
    _put(index, "c", "Bob Jones lives in Porto.", hours=2, scope="agent:x")
    entity, memories, beside = index.reader.entity(Filters(scopes=["global"]), "ann", 10)
    assert entity is not None and entity.aliases == ["Ann Smith"] and entity.memories == 2
    assert [m.id for m in memories] == ["a", "b"]  # oldest first
    assert {e.key: e.memories for e in beside} == {"lisbon": 1, "porto": 1}
    assert index.reader.entity(Filters(scopes=["global"]), "bob jones", 10)[0] is None
    (listed,), _ = index.reader.entities(Filters(scopes=["agent:x"]), 1, 0)
    assert listed.key in ("bob jones", "porto")


def test_a_catalog_made_before_the_table_gets_it_from_its_rows(tmp_path):
    index = Catalog(tmp_path / "k.sqlite")
    _put(index, "a", "I met Ann Smith in Lisbon.")
    conn = index.writer.conn
    conn.execute("DROP TABLE entities")
    conn.execute("PRAGMA user_version = 3")  # before the entities migration
    index.close()
    assert set(_listed(_migrated(tmp_path))) == {"ann smith", "lisbon"}


def test_a_catalog_filled_by_older_rules_reads_every_memory_again(tmp_path):
    """Rules that read more names ("iPhone", "李老师") reach the memories written before
    them: the migration reads every current memory's entities again."""
    index = Catalog(tmp_path / "k.sqlite")
    _put(index, "a", "I bought an iPhone from Dr. Smith.")
    _put(index, "b", "李老师今天表扬了我。", hours=1)
    conn = index.writer.conn
    conn.execute("DELETE FROM entities")  # as the older rules left it: nothing read
    conn.execute("INSERT INTO entities VALUES ((SELECT rowid FROM memories WHERE id = 'a'),"
                 " 'smith', 'Smith', 1)")
    conn.execute("PRAGMA user_version = 4")  # before the second reading
    index.close()
    assert set(_listed(_migrated(tmp_path))) == {"iphone", "smith", "李老师"}


def _migrated(tmp_path) -> Catalog:
    """The catalog opened again: migrated in place (its rows kept), the entities read."""
    with capture_logs() as logs:
        index = Catalog(tmp_path / "k.sqlite")
    assert not index.was_reset
    assert any(e["event"] == "catalog.entities_added" for e in logs)
    return index

