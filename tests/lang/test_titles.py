"""Titles: derived from what a memory is and says, kept when given, following the
content when derived; in the file, on the wire, for a hand-written note too."""

from __future__ import annotations

from datetime import UTC, datetime

from memoryd.lang.titles import MAX_TITLE, first_line, shortened, title_for
from memoryd.schema import Memory
from tests.layout import file_of


def _note(content: str, **fields) -> Memory:
    return Memory(id="0b6c2f3e-1111-4222-8333-944445555666", content=content, **fields)


def test_a_notes_title_is_its_heading_or_first_line_as_plain_text():
    assert title_for(_note("# Ann Smith\n\nWorks at the bakery.")) == "Ann Smith"
    assert title_for(_note("\n\n- [ ] call **Ann** about [[Garden Plan|the garden]]")) == (
        "call Ann about the garden")
    assert title_for(_note("```\ncode\n```")) == "code"
    assert first_line("> quoted [link](https://x.org) and `code`") == "quoted link and code"
    assert title_for(_note("---\n\n")) == "0b6c2f3e-1111-4222-8333-944445555666"


def test_long_lines_are_cut_at_a_word():
    long = "The deployment runbook for the payments service " * 4
    cut = shortened(long)
    assert len(cut) <= MAX_TITLE and cut.endswith("…") and not cut[:-1].endswith(" ")
    assert long.startswith(cut[:-1])
    assert shortened("x" * 200).endswith("…") and len(shortened("x" * 200)) == MAX_TITLE


def test_turns_and_summaries_say_where_and_when():
    turn = _note("Hi!", kind="turn", session="conv-26:3", role="user",
                 created_at=datetime(2026, 11, 25, 9, 14, 3, tzinfo=UTC))
    assert title_for(turn) == "conv-26:3 user 2026-11-25 09:14"
    assert title_for(_note("…", kind="summary", session="s1")) == "Summary of s1"


async def test_titles_are_written_kept_and_follow_the_content(rig):
    note = await rig.result("memory_write", content="# Kamal deploys\n\nTo Hetzner.",
                            category="decisions")
    assert note["title"] == "Kamal deploys"
    path = file_of(rig.root, note, "decisions")
    assert "\ntitle: Kamal deploys\n" in path.read_text()
    moved = await rig.result("memory_update", id=note["id"], content="# Fly.io deploys\n")
    assert moved["title"] == "Fly.io deploys"  # derived: follows the content
    named = await rig.result("memory_update", id=note["id"], title="How we ship")
    again = await rig.result("memory_update", id=note["id"], content="# Render now\n")
    assert named["title"] == again["title"] == "How we ship"  # given: kept
    reset = await rig.result("memory_update", id=note["id"], title="")
    assert reset["title"] == "Render now"
    given = await rig.result("memory_write", content="plain text", title="My title")
    assert given["title"] == "My title"
    bad = await rig.error("memory_write", content="x", title="two\nlines")
    assert bad["code"] == -32602


async def test_a_hand_written_note_shows_its_name_or_derived_title(rig):
    """A note written in an editor is titled by its file name (as the editor shows
    it); a file of memoryd's whose front matter lacks a title shows its derived one and
    is not rewritten for it."""
    folder = rig.root / "categories" / "knowledge"
    (folder / "garden.md").write_text("Tomatoes go in after the last frost.\n")
    written = await rig.result("memory_write", content="# Compost\n\nTurn it weekly.",
                               category="knowledge")
    own = file_of(rig.root, written, "knowledge")
    text = own.read_text().replace("title: Compost\n", "")
    own.write_text(text)
    await rig.engine.sync.reconcile()
    listed = await rig.result("memory_list", category="knowledge")
    titles = {m["id"]: m["title"] for m in listed["memories"]}
    assert titles["garden"] == "garden"  # its name, as the editor shows it
    assert titles[written["id"]] == "Compost" and own.read_text() == text
