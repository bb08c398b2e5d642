"""Ids given by a unique prefix; the trash listed and a deleted memory brought back."""

from __future__ import annotations

import json
import os
import time


async def test_a_unique_prefix_is_taken_and_an_ambiguous_one_is_refused(rig):
    ids = [(await rig.result("memory_write", content=f"note {i}"))["id"] for i in range(3)]
    one = ids[0]
    assert (await rig.result("memory_read", id=one[:6]))["id"] == one
    line = json.loads((await rig.result("memory_export"))["lines"][0])
    twins = [json.dumps({**line, "id": f"abcd{n}-twin", "content": f"twin {n}"})
             for n in (1, 2)]
    assert (await rig.result("memory_import", lines=twins))["imported"] == 2
    error = await rig.error("memory_read", id="abcd")
    assert error["code"] == -32602 and "more than one memory" in error["message"]
    assert (await rig.result("memory_read", id="abcd2"))["id"] == "abcd2-twin"
    error = await rig.error("memory_read", id=one[:3])  # too short to be looked up
    assert error["code"] == -32001
    linked = await rig.result("memory_link", source=ids[1][:8], target=ids[2][:8])
    assert (linked["source"], linked["target"]) == (ids[1], ids[2])


async def test_the_trash_lists_deletions_and_restore_brings_one_back(rig):
    a = await rig.result("memory_write", content="Ann drinks green tea", category="people")
    b = await rig.result("memory_write", content="Bea lives in Porto", category="people")
    await rig.result("memory_link", source=a["id"], target=b["id"])
    error = await rig.error("memory_restore", id=a["id"])
    assert error["code"] == -32602 and "not in the trash" in error["message"]
    await rig.result("memory_delete", id=a["id"])
    trash = await rig.result("memory_trash")
    assert [m["id"] for m in trash["memories"]] == [a["id"]]
    assert trash["memories"][0]["trash"].startswith("trash/")
    assert (await rig.result("memory_search", query="green"))["total"] == 0
    back = await rig.result("memory_restore", id=a["id"][:8])
    assert back["id"] == a["id"] and back["links"] == [] and back["restored_from"] is None
    assert (await rig.result("memory_search", query="green"))["total"] == 1
    assert (await rig.result("memory_trash"))["total"] == 0
    assert not list((rig.root / "trash").rglob(f"*{a['id']}*"))
    missing = await rig.error("memory_restore", id="never-existed")
    assert missing["code"] == -32001


async def test_replaced_facts_are_history_not_trash(rig):
    await rig.result("memory_add", text="My sister Ana lives in Porto.")
    await rig.result("memory_add", text="My sister Ana lives in Lisbon now.")
    assert (await rig.result("memory_trash"))["total"] == 0


async def test_a_killed_daemons_temp_files_in_the_kept_versions_are_swept(rig):
    """Start-up removes the temp files it meets in the folders it walks; kept versions
    (trash/versions) are not walked then, so a sweep after start-up removes what a
    killed daemon left there, and never a temp file newer than the start."""

    versions = rig.root / "trash" / "versions" / "categories" / "inbox"
    versions.mkdir(parents=True)
    old = versions / ".tmp-ab12.md.4242.deadbeef"
    old.write_text("a version being written when the daemon was killed")
    os.utime(old, (time.time() - 60, time.time() - 60))
    fresh = versions / ".tmp-cd34.md.4343.feedface"
    fresh.write_text("a write in flight")
    kept = versions / "ab12.md"
    kept.write_text("a kept version")
    assert await rig.engine.sync.sweep_trash_temps(time.time() - 30) == 1
    assert not old.exists() and fresh.exists() and kept.exists()
