"""An imported line's `extra` (a user's own front-matter keys) is plain data: it can
neither stand in for a field of the memory (a `session` that climbs out of sessions/, a
`superseded_at` that hides it) nor make a front matter memoryd could not read back;
such a line is refused alone, and what is imported reads back the same after a full
rebuild from the files."""

from __future__ import annotations

import json
import shutil

from tests.rig import Rig


def line(n: int, extra: dict) -> str:
    return json.dumps({"id": f"00000000-0000-4000-8000-0000000000{n:02d}",
                       "content": f"imported note {n}", "category": "knowledge",
                       "extra": extra})


def nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"k": value}
    return value


async def test_extra_cannot_smuggle_fields_nor_overflow_the_front_matter(tmp_path):
    rig = Rig(tmp_path / "root")
    try:
        await rig.start()
        hostile = [line(1, {"session": "../../.."}), line(2, {"pending": True}),
                   line(3, {"superseded_at": "2020-01-01T00:00:00Z"}),
                   line(4, {"replaced_by": "00000000-0000-4000-8000-000000000009"}),
                   line(5, nested(70)), line(6, {"blob": "x" * 70_000})]
        good = line(7, {"mood": "cheerful", "links_to_elsewhere": ["a", "b"],
                        "nested": {"deeper": [1, 2, {"three": 3}]}})
        result = await rig.result("memory_import", lines=[*hostile, good])
        assert result["imported"] == 1, result
        assert [f["line"] for f in result["failed"]] == [1, 2, 3, 4, 5, 6]
        assert all("extra" in f["reason"] for f in result["failed"]), result["failed"]
        kept = await rig.result("memory_read", id="00000000-0000-4000-8000-000000000007")
        assert kept["extra"]["nested"] == {"deeper": [1, 2, {"three": 3}]}
    finally:
        rig.close()
    shutil.rmtree(tmp_path / "root" / "index")  # rebuilt from the files alone
    again = Rig(tmp_path / "root")
    try:
        await again.start()
        listed = await again.result("memory_list")
        assert [m["id"] for m in listed["memories"]] == [
            "00000000-0000-4000-8000-000000000007"]
        assert listed["memories"][0]["extra"]["mood"] == "cheerful"
        assert again.engine.sync.rejected.describe()["count"] == 0
    finally:
        again.close()
