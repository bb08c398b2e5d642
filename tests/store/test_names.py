"""Readable file names: a title as a slug any file system takes, a suffix of the id,
the whole id where a name is taken."""

from __future__ import annotations

import pytest

from memoryd.store.names import (
    MAX_SLUG_BYTES,
    MAX_SLUG_CHARS,
    as_named,
    candidates,
    given_by_hand,
    slug,
)

ID = "0b6c2f3e-9a7d-4f1e-8c55-0c1d2e3f4a5b"


@pytest.mark.parametrize(("title", "expected"), [
    ("Ann Smith", "ann-smith"),
    ("Zoë's café: notes?", "zoës-café-notes"),
    ("张伟的会议记录", "张伟的会议记录"),
    ("नमस्ते दुनिया", "नमस्ते-दुनिया"),  # vowel signs (marks) are kept
    ("../../etc/passwd", "etc-passwd"),
    ('a<b>c:d"e|f?g*h\\i/j', "a-b-c-d-e-f-g-h-i-j"),  # Windows' reserved characters
    (".hidden", "hidden"), ("file.md", "file-md"), ("tab\tand\nnewline\x00", "tab-and-newline"),
    ("Cafe\u0301", "café"),  # NFC: one spelling on every file system
    ("...", ""), ("🙂", ""),
])
def test_slugs_are_safe_everywhere(title, expected):
    assert slug(title) == expected


def test_slugs_are_bounded_in_characters_and_bytes():
    assert len(slug("word " * 100)) <= MAX_SLUG_CHARS
    cjk = slug("記" * 100)
    assert len(cjk.encode()) <= MAX_SLUG_BYTES and len(cjk) == MAX_SLUG_BYTES // 3
    assert slug("Ann Smith") == slug("ANN SMITH")  # never two names that differ by case


def test_candidates_and_names_a_person_gave():
    assert candidates("Ann Smith", ID) == ["ann-smith-0b6c2f3e.md", f"ann-smith-{ID}.md",
                                           f"{ID}.md"]
    assert candidates("CON", ID)[0] == "con-0b6c2f3e.md"  # never Windows' device name
    assert candidates("!!!", ID) == [f"{ID}.md"]
    for ours in (f"{ID}.md", "ann-smith-0b6c2f3e.md", f"ann-{ID}.md",
                 f"20260101T000000000000Z__{ID}.md"):
        assert not given_by_hand(ours, ID)
    assert given_by_hand("Ann Smith.md", ID) and given_by_hand("0b6c2f3e.md", ID)


async def test_new_files_are_named_by_title_and_keep_their_name(rig):
    a = await rig.result("memory_write", content="# Ann Smith\n\nWorks at the bakery.",
                         category="people")
    folder = rig.root / "categories" / "people"
    assert (folder / f"ann-smith-{a['id'][:8]}.md").exists()
    await rig.result("memory_update", id=a["id"], content="# Ann Jones\n\nMarried in May.")
    assert (folder / f"ann-smith-{a['id'][:8]}.md").exists()  # a new title: same file
    moved = await rig.result("memory_update", id=a["id"], category="knowledge")
    assert moved["title"] == "Ann Jones"
    assert (rig.root / "categories/knowledge" / f"ann-smith-{a['id'][:8]}.md").exists()
    renamed = await rig.result("memory_rename", id=a["id"][:8])
    assert renamed["path"] == f"categories/knowledge/ann-smith-{a['id'][:8]}.md"
    assert renamed["to"] == f"categories/knowledge/ann-jones-{a['id'][:8]}.md"
    assert (rig.root / renamed["to"]).exists() and not (rig.root / renamed["path"]).exists()
    assert renamed["version"] == moved["version"] + 1
    again = await rig.result("memory_rename", id=a["id"])
    assert again["to"] == again["path"] and again["version"] == renamed["version"]
    titled = await rig.result("memory_rename", id=a["id"], title="Ann (bakery)")
    assert titled["to"] == "categories/knowledge/Ann (bakery).md"  # a title of its own
    assert (await rig.result("memory_read", id=a["id"]))["title"] == "Ann (bakery)"
    turn = await rig.result("memory_write", content="hello there", role="user", session="s1")
    assert (await rig.error("memory_rename", id=turn["id"]))["code"] == -32602


async def test_a_taken_name_falls_back_to_the_whole_id(rig):
    folder = rig.root / "categories" / "people"
    first = await rig.result("memory_import", lines=[
        '{"id": "aaaaaaaa-1", "content": "# Twin\\n\\none", "category": "people"}',
        '{"id": "aaaaaaaa-2", "content": "# Twin\\n\\ntwo", "category": "people"}'])
    assert first["imported"] == 2
    # the second's short name is the first's (one change): it takes its whole id
    assert sorted(p.name for p in folder.iterdir()) == ["twin-aaaaaaaa-2.md",
                                                        "twin-aaaaaaaa.md"]
    third = await rig.result("memory_write", content="# Twin\n\nthree", category="people")
    assert (folder / f"twin-{third['id'][:8]}.md").exists()


@pytest.mark.parametrize(("title", "expected"), [
    ("Meeting Notes", "Meeting Notes.md"),
    ("日本語のページ", "日本語のページ.md"),
    ("Whiteboard/Tool", None),  # a folder separator
    ("a:b", None), ("what?", None), ('say "hi"', None), ("pipe|name", None),
    ("Heading#part", None), ("[[x]]", None), ("^block", None),  # Obsidian link syntax
    ("CON", None), ("nul.txt", None), ("com1", None),  # Windows device names
    (".hidden", None), ("trailing.", None), (" padded", None), ("", None),
    ("x" * (MAX_SLUG_BYTES + 1), None),
])
def test_an_ingested_pages_own_name_where_every_file_system_takes_it(title, expected):
    assert as_named(title) == expected


def test_an_ingested_note_prefers_its_own_name():
    memory_id = "0b6c2f3e-0000-4000-8000-000000000001"
    assert candidates("Meeting Notes", memory_id, keep_name=True)[:2] == [
        "Meeting Notes.md", "meeting-notes-0b6c2f3e.md"]
    assert candidates("Meeting Notes", memory_id)[0] == "meeting-notes-0b6c2f3e.md"
    assert candidates("a/b", memory_id, keep_name=True)[0] == "a-b-0b6c2f3e.md"
