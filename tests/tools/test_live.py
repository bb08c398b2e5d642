"""Every read tool agrees on what is live: an inbox note whose TTL has passed (the
expire job not yet run) is gone from list, search, smart search, recall, explain and
export at once, and a compressed turn only comes back where asked for."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.rig import Rig

PAST = (datetime.now(UTC) - timedelta(days=1)).isoformat()


async def test_an_expired_inbox_note_is_gone_from_every_read(tmp_path):
    inbox = tmp_path / "categories" / "inbox"
    inbox.mkdir(parents=True)
    (inbox / "stale.md").write_text(f"---\nexpires_at: {PAST}\n---\nThe lighthouse key "
                                    "hangs by the door\n")
    (inbox / "fresh.md").write_text("The lighthouse lamp is new\n")
    rig = Rig(tmp_path)
    try:
        await rig.start()
        ask = {"query": "lighthouse"}
        listed = await rig.result("memory_list")
        assert listed["total"] == 1
        fresh = listed["memories"][0]["id"]
        found = await rig.result("memory_search", **ask)
        assert found["total"] == 1 and [m["id"] for m in found["memories"]] == [fresh]
        for tool in ("memory_smart_search", "memory_recall"):
            ranked = await rig.result(tool, **ask)
            assert [m["id"] for m in ranked["memories"]] == [fresh], tool
        explained = await rig.result("memory_explain", **ask)
        assert [c["id"] for c in explained["candidates"]] == [fresh]
        exported = await rig.result("memory_export")
        assert len(exported["lines"]) == 1 and fresh in exported["lines"][0]
        with_trash = await rig.result("memory_export", include_trash=True)
        assert len(with_trash["lines"]) == 2, "expired, not yet trashed: with the trash"
    finally:
        rig.close()


async def test_a_compressed_turn_comes_back_only_where_asked_for(tmp_path):
    turns = tmp_path / "sessions" / "s1" / "turns"
    turns.mkdir(parents=True)
    (turns / "2026-01-02T10-00-00__t1.md").write_text(
        "---\nid: t1\nrole: user\ncompressed: true\n---\nThe harbour ferry leaves at noon\n")
    (turns / "2026-01-02T10-01-00__t2.md").write_text(
        "---\nid: t2\nrole: user\n---\nThe harbour cafe opens at eight\n")
    rig = Rig(tmp_path)
    try:
        await rig.start()
        for tool, params in (("memory_list", {}), ("memory_search", {"query": "harbour"}),
                             ("memory_smart_search", {"query": "harbour ferry"})):
            hidden = await rig.result(tool, **params)
            shown = await rig.result(tool, **params, include_compressed=True)
            assert [m["id"] for m in hidden["memories"]] == ["t2"], tool
            assert sorted(m["id"] for m in shown["memories"]) == ["t1", "t2"], tool
        exported = await rig.result("memory_export")
        assert len(exported["lines"]) == 2, "a backup holds the compressed turns too"
    finally:
        rig.close()
