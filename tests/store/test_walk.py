"""Start-up's walk in a child process finds what the walk in process finds, names that
are not UTF-8 or hold a newline included; an answer that is not whole is refused, and
the walk is then made in process. Real files, a real child process."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from memoryd.schema import Memory, content_hash
from memoryd.store import walk
from memoryd.store.catalog import Catalog
from memoryd.store.files import INDEXED_DIRS, MarkdownStore
from memoryd.store.walk import ChildWalk, WalkFailed


def _odd_root(root):
    """Memory files, and everything else a walk meets under the memory folders."""
    knowledge = root / "categories" / "knowledge"
    knowledge.mkdir(parents=True)
    (knowledge / "a.md").write_text("---\nid: a\n---\nA\n")
    (knowledge / "line\nbreak.md").write_text("x")
    (knowledge / "notes.txt").write_text("not a memory")
    os.symlink("/nonexistent", knowledge / "link.md")
    os.mkfifo(knowledge / "fifo.md")
    (knowledge / ".tmp-a.md.123.abcd").write_text("a killed daemon's temp")
    (knowledge / ".hidden").mkdir()
    (knowledge / ".hidden" / "h.md").write_text("h")
    with open(os.fsencode(knowledge) + b"/caf\xe9.md", "wb") as fh:  # Latin-1, not UTF-8
        fh.write(b"x")
    turns = root / "sessions" / "s1" / "turns"
    turns.mkdir(parents=True)
    (turns / "t.md").write_text("t")
    elsewhere = root.parent / f"{root.name}-elsewhere"
    elsewhere.mkdir()
    (root / "trash").mkdir()
    os.symlink(elsewhere, root / "trash" / "categories")  # a linked top folder


def test_the_child_walk_finds_what_the_walk_in_process_finds(tmp_path):
    root = tmp_path / "root"
    _odd_root(root)
    files, temps = ChildWalk(root, INDEXED_DIRS).result()
    assert (files, temps) == walk.stamped(root, INDEXED_DIRS)
    latin = os.fsdecode(b"categories/knowledge/caf\xe9.md")
    assert set(files) == {"categories/knowledge/a.md", "categories/knowledge/line\nbreak.md",
                          "categories/knowledge/link.md", "categories/knowledge/fifo.md",
                          "categories/knowledge/.hidden/h.md", latin,
                          "sessions/s1/turns/t.md", "trash/categories"}
    assert files["categories/knowledge/a.md"] == walk.stamp(
        (root / "categories/knowledge/a.md").stat())
    # Not regular files: no stamp, so start-up reads (and reports) them.
    for odd in ("link.md", "fifo.md"):
        assert files[f"categories/knowledge/{odd}"] is None
    assert files["trash/categories"] is None
    assert temps == ["categories/knowledge/.tmp-a.md.123.abcd"]


def test_an_answer_that_is_not_whole_is_refused(tmp_path):
    root = tmp_path / "root"
    _odd_root(root)
    whole = walk.encode(*walk.stamped(root, INDEXED_DIRS))
    assert walk.decode(whole) == walk.stamped(root, INDEXED_DIRS)
    assert walk.decode(walk.encode({}, [])) == ({}, [])
    for broken in (b"", whole[:-3], whole[:len(whole) // 2], b"9\0a\0b\0end",
                   b"1\0a\0b\0\x30\0end\0end", whole.replace(b"\0end", b"\0and"),
                   b"0\x001\0categories/a.md\0end",  # a memory file named as a temp
                   b"0\x002\0categories/.tmp-a\0end"):
        with pytest.raises(WalkFailed):
            walk.decode(broken)


@pytest.mark.parametrize("script", [
    "import sys; sys.exit(3)",
    "import sys; sys.stdout.write('1\\0categories/knowledge/a.md')",  # cut short
])
def test_a_failed_child_walk_is_made_again_in_process(tmp_path, monkeypatch, script):
    root = tmp_path / "root"
    _odd_root(root)
    failing = tmp_path / "failing.py"
    failing.write_text(script)
    monkeypatch.setattr(walk, "__file__", str(failing))
    store = MarkdownStore(root)
    with capture_logs() as logs:
        files, removed = store.stamped_files(INDEXED_DIRS, store.walk_in_child(INDEXED_DIRS))
    assert files == walk.stamped(root, INDEXED_DIRS)[0]
    assert removed == 1 and not (root / "categories/knowledge/.tmp-a.md.123.abcd").exists()
    assert [e["event"] for e in logs] == ["files.walk_failed"]


def test_temps_stay_when_asked(tmp_path):
    """After start-up a temp file may be a write in flight: the watcher's catch-up
    walks without removing any."""
    root = tmp_path / "root"
    _odd_root(root)
    store = MarkdownStore(root)
    files, removed = store.stamped_files(INDEXED_DIRS, store.walk_in_child(INDEXED_DIRS),
                                         remove_temps=False)
    assert "categories/knowledge/a.md" in files
    assert removed == 0 and (root / "categories/knowledge/.tmp-a.md.123.abcd").exists()


def test_a_child_walk_that_is_not_waited_for_is_stopped(tmp_path, monkeypatch):
    slow = tmp_path / "slow.py"
    slow.write_text("import time; time.sleep(60)")
    monkeypatch.setattr(walk, "__file__", str(slow))
    child = ChildWalk(tmp_path, INDEXED_DIRS)
    child.close()
    assert not child.running
    child.close()  # twice is harmless


def test_the_child_runs_with_the_standard_library_only():
    """It runs as a script with -I -S: no site packages, nothing of memoryd."""
    source = Path(walk.__file__).read_text(encoding="utf-8")
    imported = {line.split()[1].split(".")[0] for line in source.splitlines()
                if line.startswith(("import ", "from "))}
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}


def test_without_a_python_to_run_it_walks_in_process(tmp_path, monkeypatch):
    root = tmp_path / "root"
    _odd_root(root)
    monkeypatch.setattr(sys, "executable", "")
    store = MarkdownStore(root)
    with capture_logs() as logs:
        child = store.walk_in_child(INDEXED_DIRS)
    assert child is None and [e["event"] for e in logs] == ["files.walk_not_started"]
    assert store.stamped_files(INDEXED_DIRS, child)[0] == walk.stamped(root, INDEXED_DIRS)[0]


def test_a_background_walk_runs_at_the_lowest_priority(tmp_path, monkeypatch, capsysbinary):
    """The watcher's catch-up walks beside the first queries: its child asks the
    kernel for the lowest priority (niceness 19) before it walks; start-up's does not."""
    root = tmp_path / "root"
    _odd_root(root)
    asked: list[int] = []
    monkeypatch.setattr(walk.os, "nice", asked.append)
    for niceness in ("0", "19"):
        assert walk.main([niceness, str(root), *INDEXED_DIRS]) == 0
        assert walk.decode(capsysbinary.readouterr().out) == walk.stamped(root, INDEXED_DIRS)
    assert asked == [19]
    background, foreground = ChildWalk(root, INDEXED_DIRS, background=True), ChildWalk(
        root, INDEXED_DIRS)
    assert (background.niceness, foreground.niceness) == (19, 0)
    assert background.result() == foreground.result() == walk.stamped(root, INDEXED_DIRS)


def test_a_child_given_the_catalog_answers_only_what_differs(tmp_path):
    """The catch-up's child compares: it reads the catalog's stamps and answers the
    files to read (a stamp that is not the recorded one, none recorded, not a regular
    file, not recorded at all) and the recorded paths it did not find, and nothing
    about the files that are as indexed."""
    root = tmp_path / "root"
    _odd_root(root)
    files, _ = walk.stamped(root, INDEXED_DIRS)
    k = "categories/knowledge"
    known = {f"{k}/a.md": files[f"{k}/a.md"],  # as indexed: not answered
             f"{k}/line\nbreak.md": "1:2:3",  # edited since
             "sessions/s1/turns/t.md": None,  # no stamp recorded
             f"{k}/fifo.md": files[f"{k}/a.md"],  # a FIFO now
             f"{k}/gone.md": "4:5:6"}  # removed since
    catalog = Catalog(tmp_path / "k.sqlite")
    with catalog.transaction():
        for n, (path, mark) in enumerate(known.items()):
            text = f"note {n}"
            catalog.writer.upsert(Memory(id=f"m{n}", content=text, content_hash=content_hash(text),
                                  created_at=datetime(2025, 1, 1, tzinfo=UTC)),
                           path, "sha", mark)
    assert catalog.writer.stamps() == known
    differ, gone = ChildWalk(root, INDEXED_DIRS, background=True,
                             catalog=catalog.path).differences()
    assert differ == {
        f"{k}/line\nbreak.md": files[f"{k}/line\nbreak.md"],
        "sessions/s1/turns/t.md": files["sessions/s1/turns/t.md"],
        f"{k}/fifo.md": None, f"{k}/link.md": None, "trash/categories": None,
        f"{k}/.hidden/h.md": files[f"{k}/.hidden/h.md"],  # not recorded
        os.fsdecode(b"categories/knowledge/caf\xe9.md"): files[
            os.fsdecode(b"categories/knowledge/caf\xe9.md")]}
    assert gone == [f"{k}/gone.md"]
    catalog.close()
    with pytest.raises(WalkFailed):  # no catalog to read: refused, never half-compared
        ChildWalk(root, INDEXED_DIRS, catalog=tmp_path / "none.sqlite").differences()
