"""memory_export / memory_import: a lossless round trip of every kind of memory,
paging, malformed lines, conflicts, and an import killed mid-way then re-run."""

from __future__ import annotations

import json

from tests.rig import Rig


async def _fill(rig: Rig) -> None:
    """A store with every kind: notes (inbox, organized, linked, tagged, hand-edited
    with a key of the user's own), a reminder, turns, facts with history, a session
    summary, and a soft delete."""
    a = await rig.result("memory_write", content="Inbox note about the garden.", tags=["g"])
    b = await rig.result("memory_write", content="Organized note: the shop uses Django.",
                         category="project", importance=0.8)
    await rig.result("memory_link", source=a["id"], target=b["id"])
    await rig.result("memory_remind", content="Call the plumber", due_at="2030-01-02T09:00:00Z")
    await rig.result("memory_remember", session="s1", role="user",
                     content="I live in Boston and I love hiking on weekends.")
    await rig.result("memory_remember", session="s1", role="assistant",
                     content="Hiking around Boston is lovely in autumn.")
    await rig.engine.learning.drain()
    await rig.result("memory_add", text="I moved to Denver last month.")  # supersedes Boston
    gone = await rig.result("memory_write", content="A note deleted soon after.")
    await rig.result("memory_delete", id=gone["id"])
    await rig.result("memory_read", id=b["id"])  # an access still buffered
    record = rig.engine.catalog.writer.record_by_id(a["id"])
    assert record is not None
    file = rig.root / record.path
    file.write_text(file.read_text().replace("---\n", "---\nmy_key: kept\n", 1))
    await rig.engine.sync.sync_paths([record.path])


async def _export(rig: Rig, **params) -> list[str]:
    lines, after = [], ""
    while True:
        page = await rig.result("memory_export", after=after, limit=3, **params)
        lines += page["lines"]
        if page["next"] is None:
            return lines
        after = page["next"]


async def test_export_import_export_is_byte_identical(rig, tmp_path) -> None:
    await _fill(rig)
    lines = await _export(rig, include_trash=True)
    kinds = {json.loads(line)["kind"] for line in lines}
    assert kinds == {"note", "reminder", "turn", "fact", "summary"}
    assert [json.loads(x)["id"] for x in lines] == sorted(json.loads(x)["id"] for x in lines)
    trashed = [json.loads(x) for x in lines if '"trashed":true' in x]
    # the delete, the old fact, and the summary version that still stated it
    assert {t["kind"] for t in trashed} == {"note", "fact", "summary"}
    assert any(json.loads(x).get("extra") == {"my_key": "kept"} for x in lines)
    assert any(json.loads(x)["access_count"] == 1 for x in lines)

    other = Rig(tmp_path / "other")
    await other.start()
    try:
        for start in range(0, len(lines), 4):
            result = await other.result("memory_import", lines=lines[start:start + 4],
                                        first_line=start + 1)
            assert result["failed"] == []
        assert await _export(other, include_trash=True) == lines
        # History and links work in the new root.
        fact = next(m for m in map(json.loads, lines)
                    if m["kind"] == "fact" and "Denver" in m["content"])
        history = await other.result("memory_history", id=fact["id"])
        assert [v["current"] for v in history["versions"]] == [False, True]
        note = next(json.loads(x) for x in lines if "garden" in x)
        back = await other.result("memory_backlinks", id=note["links"][0])
        assert [m["id"] for m in back["memories"]] == [note["id"]]
        found = await other.result("memory_smart_search", query="Django shop")
        assert found["memories"]
        # Without include_trash the soft delete and the summary's replaced version stay
        # out; the superseded fact, history, stays in.
        assert len(await _export(other)) == len(lines) - 2
    finally:
        other.close()


async def test_malformed_lines_are_reported_and_the_rest_imports(rig) -> None:
    good = json.dumps({"id": "n-1", "content": "A fine memory.", "kind": "note"})
    result = await rig.result("memory_import", first_line=10, lines=[
        "{not json", good, json.dumps({"content": "no id"}),
        json.dumps({"id": "n-2", "content": "bad", "importance": 7}),
        json.dumps({"id": "../escape", "content": "x"}), "[1, 2]",
        json.dumps({"id": "n-3", "content": "   "})])
    assert result["imported"] == 1
    failed = {f["line"]: f["reason"] for f in result["failed"]}
    assert sorted(failed) == [10, 12, 13, 14, 15, 16]
    assert "importance" in failed[13] and "id" in failed[14]
    assert (await rig.result("memory_read", id="n-1"))["content"] == "A fine memory."


async def test_conflicts_skip_replace_keep_both(rig) -> None:
    mine = await rig.result("memory_write", content="Mine.", category="knowledge")
    theirs = dict(mine, content="Theirs.", version=mine["version"] + 5)
    line = json.dumps(theirs)
    skipped = await rig.result("memory_import", lines=[line])
    assert skipped["skipped"] == 1
    assert (await rig.result("memory_read", id=mine["id"]))["content"] == "Mine."
    replaced = await rig.result("memory_import", lines=[line], on_conflict="replace")
    assert replaced["replaced"] == 1
    assert (await rig.result("memory_read", id=mine["id"]))["content"] == "Theirs."
    both = await rig.result("memory_import", lines=[json.dumps(dict(theirs, content="Third."))],
                            on_conflict="keep-both")
    assert both["kept_both"] == 1
    assert (await rig.result("memory_search", query="Third"))["total"] == 1


async def test_an_import_killed_midway_and_rerun_ends_with_the_same_set(rig, tmp_path) -> None:
    await _fill(rig)
    lines = await _export(rig, include_trash=True)
    half = Rig(tmp_path / "half")
    await half.start()
    await half.result("memory_import", lines=lines[: len(lines) // 2])
    half.close()  # the daemon goes away mid-import
    again = Rig(tmp_path / "half")
    await again.start()
    try:
        result = await again.result("memory_import", lines=lines)
        assert result["skipped"] == len(lines) // 2 and result["failed"] == []
        assert await _export(again, include_trash=True) == lines
    finally:
        again.close()
