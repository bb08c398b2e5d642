"""Every date a memory can carry (years 1 to 9999) is stored, listed, searched and
imported: a memory's rowid counts its creation second, and seconds beyond ±2**33
(before 1697, after 2242) share the edge seconds, whose range ends used to overflow
SQLite's integers (-32603, one such line failing a whole import)."""

from __future__ import annotations

import json
from datetime import datetime

from tests.rig import Rig

WHEN = ["0001-01-01T00:00:00+00:00", "1500-06-01T00:00:00+00:00",
        "2242-03-16T12:56:31+00:00", "2243-01-01T00:00:00+00:00",
        "2300-05-01T00:00:00+00:00", "9999-12-31T23:59:59+00:00"]


async def test_any_date_from_year_1_to_9999_is_a_memory_like_any_other(tmp_path):
    (tmp_path / "categories" / "knowledge").mkdir(parents=True)
    (tmp_path / "categories" / "knowledge" / "by-hand.md").write_text(
        "---\ncreated_at: 2500-01-01T00:00:00Z\n---\nA zebra note written by hand\n")
    rig = Rig(tmp_path)
    try:
        await rig.start()
        written = [await rig.result("memory_write", content=f"zebra note {i}",
                                    created_at=when) for i, when in enumerate(WHEN)]
        imported = await rig.result("memory_import", lines=[json.dumps({
            "id": f"00000000-0000-4000-8000-00000000000{i}", "content": f"zebra line {i}",
            "created_at": when}) for i, when in enumerate(WHEN)])
        assert imported["imported"] == len(WHEN) and imported["failed"] == []
        everything = 2 * len(WHEN) + 1
        listed = await rig.result("memory_list", limit=100)
        assert listed["total"] == everything
        stamps = [m["created_at"] for m in listed["memories"]]
        assert stamps == sorted(stamps, reverse=True), "newest first, edges too"
        assert {datetime.fromisoformat(m["created_at"]) for m in written} == {
            datetime.fromisoformat(w) for w in WHEN}
        found = await rig.result("memory_search", query="zebra", limit=100)
        assert found["total"] == everything
        for start, end, want in (("9999-12-31", "9999-12-31", 2), ("0001-01-01", None, 0),
                                 (None, "0001-01-01", 2), ("2243-01-01", "2299-12-31", 2)):
            window = {k: v for k, v in (("from", start), ("to", end)) if v}
            got = await rig.result("memory_search", query="zebra", limit=100, **window)
            if start == "0001-01-01":
                want = everything
            assert got["total"] == want, (window, got["total"])
        assert (await rig.result("memory_smart_search", query="zebra note",
                                 as_of="9999-12-31"))["memories"]
        assert rig.engine.sync.rejected.describe()["count"] == 0
    finally:
        rig.close()
