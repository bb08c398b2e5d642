"""Conflict copies other sync tools leave (Syncthing, Dropbox, numbered copies): merged
into the original by the sync's rules, the losing text kept as a version, the copy
removed; a file that only looks like a copy is a note of its own."""

from __future__ import annotations

import pytest

from memoryd.store import copies
from tests.layout import relpath_of

NAMES = {
    "syncthing": "{stem}.sync-conflict-20261126-101112-ABCDEFG.md",
    "dropbox": "{stem} (Ann's conflicted copy 2026-11-26).md",
    "numbered": "{stem} (1).md",
}


def test_each_scheme_names_its_original() -> None:
    for scheme, name in NAMES.items():
        copy = "categories/people/" + name.format(stem="ann-0b6c2f3e")
        assert copies.original_of(copy) == ("categories/people/ann-0b6c2f3e.md", scheme)
    assert copies.original_of("categories/people/sync-conflict.md") is None
    assert copies.original_of("categories/people/ann (conflicted copy).md") == (
        "categories/people/ann.md", "dropbox")
    assert copies.original_of("categories/people/notes (2020).md") is None


def edited(text: str, content: str, version: int) -> str:
    head, _, _ = text.rpartition("---\n")
    lines = [f"version: {version}" if line.startswith("version:") else line
             for line in head.splitlines()]
    return "\n".join(lines) + f"\n---\n{content}\n"


@pytest.mark.parametrize("scheme", sorted(NAMES))
async def test_a_newer_copy_replaces_the_original_and_goes(rig, scheme) -> None:
    m = await rig.result("memory_write", content="Ann lives in Paris", category="people")
    original = relpath_of(rig.root, m)
    folder, _, name = original.rpartition("/")
    copy = f"{folder}/" + NAMES[scheme].format(stem=name.removesuffix(".md"))
    text = (rig.root / original).read_text()
    (rig.root / copy).write_text(edited(text, "Ann lives in Berlin", 2))
    await rig.engine.sync.sync_paths([copy])
    assert not (rig.root / copy).exists()
    read = await rig.result("memory_read", id=m["id"])
    assert read["content"] == "Ann lives in Berlin" and read["version"] == 2
    history = await rig.result("memory_history", id=m["id"])
    assert {v["content"] for v in history["versions"]} >= {"Ann lives in Paris",
                                                           "Ann lives in Berlin"}
    listed = await rig.result("memory_list", category="people")
    assert [x["id"] for x in listed["memories"]] == [m["id"]]  # no second memory


async def test_an_older_copy_is_kept_as_a_version_and_goes(rig) -> None:
    m = await rig.result("memory_write", content="Ann lives in Paris", category="people")
    await rig.result("memory_update", id=m["id"], content="Ann lives in Rome")
    original = relpath_of(rig.root, m)
    text = (rig.root / original).read_text()
    copy = original.removesuffix(".md") + ".sync-conflict-20261126-101112-ABCDEFG.md"
    (rig.root / copy).write_text(edited(text, "Ann lives in Oslo", 1))
    await rig.engine.sync.sync_paths([copy])
    assert not (rig.root / copy).exists()
    assert (rig.root / original).read_text() == text  # the original won: left as it was
    history = await rig.result("memory_history", id=m["id"])
    assert "Ann lives in Oslo" in {v["content"] for v in history["versions"]}


async def test_a_file_named_like_a_copy_of_another_memory_is_its_own_note(rig) -> None:
    m = await rig.result("memory_write", content="Meeting notes", category="knowledge")
    original = relpath_of(rig.root, m)
    other = original.removesuffix(".md") + " (1).md"
    (rig.root / other).write_text("A different note altogether\n")
    await rig.engine.sync.sync_paths([other])
    assert (rig.root / other).exists()
    listed = await rig.result("memory_list", category="knowledge")
    assert len(listed["memories"]) == 2


async def test_a_losing_copy_of_the_same_version_is_listed_in_the_history(rig) -> None:
    """Both machines edited version 1 into a version 2 of their own: one wins, and the
    other's text is a version memory_history lists (not only a file in the trash)."""
    m = await rig.result("memory_write", content="Ann lives in Paris", category="people")
    await rig.result("memory_update", id=m["id"], content="Ann lives in Rome")
    original = relpath_of(rig.root, m)
    text = (rig.root / original).read_text()
    copy = original.removesuffix(".md") + " (1).md"
    (rig.root / copy).write_text(edited(text, "Ann lives in Lyon", 2))
    await rig.engine.sync.sync_paths([copy])
    assert not (rig.root / copy).exists()
    history = await rig.result("memory_history", id=m["id"])
    contents = [v["content"] for v in history["versions"]]
    assert {"Ann lives in Rome", "Ann lives in Lyon"} <= set(contents), contents
    current = (await rig.result("memory_read", id=m["id"]))["content"]
    assert current in ("Ann lives in Rome", "Ann lives in Lyon")


async def test_a_copy_of_a_copy_and_a_turns_copy_are_merged(rig) -> None:
    """`name (1) (1).md` (a copy made of a copy) and a Syncthing copy of a turn's file:
    each merged into its memory and removed, neither left as a second memory."""
    m = await rig.result("memory_write", content="Ann lives in Paris", category="people")
    original = relpath_of(rig.root, m)
    text = (rig.root / original).read_text()
    twice = original.removesuffix(".md") + " (1) (1).md"
    (rig.root / twice).write_text(edited(text, "Ann lives in Berlin", 2))
    await rig.engine.sync.sync_paths([twice])
    assert not (rig.root / twice).exists()
    assert (await rig.result("memory_read", id=m["id"]))["content"] == "Ann lives in Berlin"
    turn = await rig.result("memory_remember", session="s1", role="user",
                            content="I moved to Lisbon last spring and I love it there")
    turns = list((rig.root / "sessions" / "s1" / "turns").glob("*.md"))
    assert len(turns) == 1
    name = turns[0].name.removesuffix(".md") + ".sync-conflict-20261126-101112-ABCDEFG.md"
    copy = turns[0].with_name(name)
    copy.write_text(edited(turns[0].read_text(), "I moved to Porto last spring", 2))
    await rig.engine.sync.sync_paths([str(copy.relative_to(rig.root))])
    assert not copy.exists()
    read = await rig.result("memory_read", id=turn["id"])
    assert read["content"] == "I moved to Porto last spring"
    listed = await rig.result("memory_list", kind="turn")
    assert [x["id"] for x in listed["memories"]] == [turn["id"]]
