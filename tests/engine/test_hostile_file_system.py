"""The hostile file system: whatever a person (or another program) puts under the root
is untrusted input. Links, FIFOs, YAML bombs, huge files, invalid fields and
unreadable files are refused, reported (log + `stats`) and left exactly as they are;
nothing memoryd does follows a path out of the root; one bad file never stops the
others, nor start-up. Real files and SQLite; the fake embedder and in-memory vectors.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import trio

from memoryd.engine import NewMemory
from memoryd.protocol.dispatch import Connection
from memoryd.schema import Memory
from memoryd.scopes import Caller
from memoryd.store.files import MAX_FILE_BYTES, UnsafePath
from tests.layout import relpath_of
from tests.rig import Rig


class HostileRig(Rig):
    """A rig that writes files by hand and syncs them as the watcher would."""

    async def sync(self, *paths: str) -> dict:
        with trio.fail_after(30):  # a hang (a FIFO) fails the test instead of the suite
            return await self.engine.sync.sync_paths(list(paths))

    async def rejected(self) -> dict[str, str]:
        stats = await self.result("stats")
        return {f["path"]: f["reason"] for f in stats["rejected_files"]["files"]}

    def write(self, relpath: str, text: str | bytes) -> Path:
        path = self.root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode() if isinstance(text, str) else text)
        return path

    def outside(self) -> set[Path]:
        """Everything in the root's parent folder that is not the root itself."""
        return {p for p in self.root.parent.rglob("*") if self.root not in (p, *p.parents)}


@pytest.fixture
async def rig(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    rig = HostileRig(root)
    await rig.start()
    yield rig
    rig.close()


@pytest.fixture
async def make_rig(tmp_path):
    """A rig whose root is prepared (hostile files and all) before start-up."""
    made: list[HostileRig] = []
    root = tmp_path / "root"
    root.mkdir()

    async def start() -> HostileRig:
        rig = HostileRig(root)
        with trio.fail_after(60):
            rig.summary = await rig.start()
        made.append(rig)
        return rig

    yield root, start
    for rig in made:
        rig.close()


EVIL_TURN = ("---\nid: evilturn\nkind: turn\nrole: user\nsession: ../../../../tmp/escaped\n"
             "---\nI am a turn that wants out\n")


# -- 1. fields read from disk pass the wire's validation; paths stay in the root ----------
async def test_a_hand_written_turn_cannot_move_anything_outside_the_root(rig):
    before = rig.outside()
    path = rig.write("categories/knowledge/evilturn.md", EVIL_TURN)
    await rig.sync("categories/knowledge/evilturn.md")
    assert "session" in (await rig.rejected())["categories/knowledge/evilturn.md"]
    for method, params in (("memory_tag", {"id": "evilturn", "add": ["x"]}),
                           ("memory_update", {"id": "evilturn", "content": "moved?"}),
                           ("memory_upgrade", {"id": "evilturn"}),
                           ("memory_delete", {"id": "evilturn"})):
        assert (await rig.error(method, **params))["code"] == -32001
    assert path.read_text() == EVIL_TURN, "left alone, never repaired"
    assert rig.outside() == before
    assert not (rig.root / "trash" / "categories" / "knowledge" / "evilturn.md").exists()


async def test_a_valid_file_edited_into_an_escape_is_dropped_and_left_alone(rig):
    m = await rig.result("memory_write", content="an honest note", category="knowledge")
    rel = relpath_of(rig.root, m, "knowledge")
    path = rig.root / rel
    evil = path.read_text().replace("kind: note", "kind: turn\nrole: user\n"
                                    "session: ../../../../tmp/escaped")
    path.write_text(evil)
    changed = await rig.sync(rel)
    assert changed["deleted"] == [rel]
    assert (await rig.error("memory_tag", id=m["id"], add=["x"]))["code"] == -32001
    assert (await rig.result("memory_search", query="honest"))["total"] == 0
    assert path.read_text() == evil
    # fixed by hand: served again, and no longer reported
    path.write_text(evil.replace("session: ../../../../tmp/escaped", "session: chat-1"))
    await rig.sync(rel)
    assert (await rig.result("memory_search", query="honest"))["total"] == 1
    assert await rig.rejected() == {}


async def test_the_turn_file_itself_is_checked_before_memoryd_acts_on_it(rig):
    """A memory read back for a change is validated again (it may have been edited after it
    was indexed and before the watcher caught up): the change is refused with -32007."""
    m = await rig.result("memory_write", content="a turn", session="chat-1", role="user")
    (path,) = (rig.root / "sessions" / "chat-1" / "turns").iterdir()
    path.write_text(path.read_text().replace("session: chat-1", "session: ../../../x"))
    error = await rig.error("memory_tag", id=m["id"], add=["x"])  # before any sync
    assert error["code"] == -32007 and "session" in error["message"]
    assert not (rig.root.parent / "x").exists()


@pytest.mark.parametrize("relpath, text, field", [
    ("categories/knowledge/a.md", "---\nid: ../../a\n---\nx", "id"),
    ("categories/knowledge/b.md", "---\nscope: agent:../../root\n---\nx", "scope"),
    ("categories/knowledge/c.md", "---\nimportance: very\n---\nx", "importance"),
    ("categories/knowledge/d.md", "---\ntags: [" + ", ".join(f"t{i}" for i in range(65))
     + "]\n---\nx", "tags"),
    ("categories/knowledge/e.md", "---\nlinks: ['../../etc']\n---\nx", "links"),
    ("categories/knowledge/f.md", "---\nversion: -3\n---\nx", "version"),
    ("categories/knowledge/g.md", "---\ncreated_at: soon\n---\nx", "created_at"),
    ("sessions/bad name/turns/t.md", "a turn in a folder that is no session name", "session"),
])
async def test_invalid_fields_are_refused_naming_the_field_and_the_file_is_untouched(
        rig, relpath, text, field):
    path = rig.write(relpath, text)
    await rig.sync(relpath)
    assert field in (await rig.rejected())[relpath]
    assert path.read_text() == text
    assert (await rig.result("memory_list"))["total"] == 0


def test_a_computed_path_is_proven_inside_the_root(tmp_path):
    from memoryd.store.files import MarkdownStore

    files = MarkdownStore(tmp_path)
    with pytest.raises(UnsafePath):
        files.relpath_for(Memory(id="x", kind="turn", session="../../../tmp"))
    with pytest.raises(UnsafePath):
        files.relpath_for(Memory(id="../x", category="knowledge"))
    for bad in ("../x.md", "/etc/passwd", "categories//x.md", "categories/./x.md", ""):
        with pytest.raises(UnsafePath):
            files.abspath(bad)


# -- 2. symbolic links are never followed ------------------------------------------------
async def test_a_dangling_link_does_not_stop_start_up(make_rig):
    root, start = make_rig
    (root / "categories" / "knowledge").mkdir(parents=True)
    os.symlink("/nonexistent", root / "categories" / "knowledge" / "l.md")
    (root / "categories" / "knowledge" / "fine.md").write_text("a fine note")
    rig = await start()
    assert "symbolic link" in (await rig.rejected())["categories/knowledge/l.md"]
    assert (await rig.result("memory_search", query="fine"))["total"] == 1
    assert rig.summary["rejected"] == 1


async def test_a_link_to_a_file_outside_is_never_read_nor_copied(rig, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:the secret password line")
    os.symlink(secret, rig.root / "categories" / "knowledge" / "p.md")
    await rig.sync("categories/knowledge/p.md")
    assert "categories/knowledge/p.md" in await rig.rejected()
    assert (await rig.result("memory_search", query="password"))["total"] == 0
    copies = [p for p in rig.root.rglob("*") if p.is_file() and not p.is_symlink()
              and b"password" in p.read_bytes()]
    assert copies == []


async def test_a_linked_folder_is_not_entered_and_the_rest_of_the_batch_is_indexed(rig, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.md").write_text("a note that lives outside the root")
    os.symlink(elsewhere, rig.root / "categories" / "knowledge" / "linked")
    rig.write("categories/knowledge/good.md", "a good note inside")
    await rig.sync("categories/knowledge/linked/x.md", "categories/knowledge/good.md")
    assert "categories/knowledge/linked/x.md" in await rig.rejected()
    assert (await rig.result("memory_search", query="outside"))["total"] == 0
    assert (await rig.result("memory_search", query="inside"))["total"] == 1
    # a full reconcile (start-up) reports the link and never walks into it
    summary = await rig.engine.sync.reconcile()
    assert "categories/knowledge/linked" in await rig.rejected()
    assert summary["rejected"] >= 1


async def test_an_indexed_file_replaced_by_a_link_is_dropped(rig, tmp_path):
    m = await rig.result("memory_write", content="soon a link", category="knowledge")
    relpath = relpath_of(rig.root, m, "knowledge")
    (rig.root / relpath).unlink()
    os.symlink(tmp_path, rig.root / relpath)
    changed = await rig.sync(relpath)
    assert changed["deleted"] == [relpath]
    assert (await rig.error("memory_read", id=m["id"]))["code"] == -32001


# -- 3. YAML bombs -------------------------------------------------------------------------
BOMB = "---\n" + "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 9)) + "---\nboom\n"


@pytest.mark.parametrize("text, why", [
    (BOMB, "aliases"),
    ("---\ntags: &t [a, b]\nlinks: *t\n---\nx", "aliases"),
    ("---\nextra: " + "[" * 5000 + "]" * 5000 + "\n---\nx", "deeply"),
    ("---\nnote: " + "y" * (70 * 1024) + "\n---\nx", "characters"),
])
async def test_yaml_bombs_are_refused_before_anything_is_built(make_rig, text, why):
    root, start = make_rig
    (root / "categories" / "knowledge").mkdir(parents=True)
    path = root / "categories" / "knowledge" / "bomb.md"
    path.write_text(text)
    rig = await start()
    assert why in (await rig.rejected())["categories/knowledge/bomb.md"]
    assert path.read_text() == text and path.stat().st_size == len(text.encode())


# -- 4. FIFOs and other non-regular files --------------------------------------------------
async def test_a_fifo_named_md_neither_blocks_start_up_nor_writes(make_rig):
    root, start = make_rig
    (root / "categories" / "knowledge").mkdir(parents=True)
    os.mkfifo(root / "categories" / "knowledge" / "f.md")
    rig = await start()
    assert "regular" in (await rig.rejected())["categories/knowledge/f.md"]
    os.mkfifo(root / "categories" / "inbox" / "g.md")
    rig.write("categories/inbox/h.md", "written beside a fifo")
    await rig.sync("categories/inbox/g.md", "categories/inbox/h.md")
    with trio.fail_after(30):
        m = await rig.result("memory_write", content="a write after the fifos")
    assert (await rig.result("memory_read", id=m["id"]))["content"] == "a write after the fifos"
    assert (await rig.result("memory_search", query="beside"))["total"] == 1


# -- 5. huge files -------------------------------------------------------------------------
async def test_huge_files_are_refused_by_size_without_being_read(rig):
    big = rig.write("categories/knowledge/big.md", b"word " * (MAX_FILE_BYTES // 5 + 10))
    long = rig.write("categories/knowledge/long.md", "x" * (256 * 1024 + 10))
    await rig.sync("categories/knowledge/big.md", "categories/knowledge/long.md")
    rejected = await rig.rejected()
    assert "bytes" in rejected["categories/knowledge/big.md"]
    assert "content" in rejected["categories/knowledge/long.md"]
    assert big.stat().st_size > MAX_FILE_BYTES and long.stat().st_size == 256 * 1024 + 10
    assert (await rig.result("memory_list"))["total"] == 0


# -- permissions, encodings, and one file never stopping the others -------------------------
async def test_an_unreadable_file_is_reported_and_the_others_are_indexed(rig, monkeypatch):
    locked = rig.write("categories/knowledge/locked.md", "private")
    locked.chmod(0)
    if os.geteuid() == 0:  # root reads a 0000 file: refuse it as the kernel would a user
        import memoryd.store.files as files_module

        real_open = os.open

        def refusing_open(path, flags, *args, **kwargs):
            if path == "locked.md":
                raise PermissionError(13, "Permission denied")
            return real_open(path, flags, *args, **kwargs)

        monkeypatch.setattr(files_module.os, "open", refusing_open)
    rig.write("categories/knowledge/open.md", "an open note")
    rig.write("categories/knowledge/latin1.md", "caf\xe9".encode("latin-1"))
    try:
        await rig.sync("categories/knowledge/locked.md", "categories/knowledge/latin1.md",
                       "categories/knowledge/open.md")
        rejected = await rig.rejected()
        assert "cannot be read" in rejected["categories/knowledge/locked.md"]
        assert "UTF-8" in rejected["categories/knowledge/latin1.md"]
        assert (await rig.result("memory_search", query="open"))["total"] == 1
    finally:
        locked.chmod(0o600)


async def test_a_failing_file_never_aborts_the_batch(rig, monkeypatch):
    rig.write("categories/knowledge/one.md", "first of the batch")
    rig.write("categories/knowledge/two.md", "second of the batch")
    real = rig.engine.sync._index_file

    def flaky(uow, path, now, keep=True):
        if path.endswith("one.md"):
            raise RuntimeError("a bug of ours")
        return real(uow, path, now, keep)

    monkeypatch.setattr(rig.engine.sync, "_index_file", flaky)
    changed = await rig.sync("categories/knowledge/one.md", "categories/knowledge/two.md")
    assert changed["added"] == ["categories/knowledge/two.md"]


async def test_stats_names_the_rejected_files_for_the_user_and_counts_them_for_agents(rig):
    rig.write("categories/knowledge/bad.md", "---\nimportance: 7\n---\nx")
    await rig.sync("categories/knowledge/bad.md")
    for_user = await rig.result("stats")
    assert for_user["rejected_files"]["count"] == 1
    assert for_user["rejected_files"]["files"][0]["path"] == "categories/knowledge/bad.md"
    conn = Connection()
    conn.caller = Caller(agent="agent:bot")
    for_agent = await rig.result("stats", conn)
    assert for_agent["rejected_files"] == {"count": 1}


async def test_a_tag_never_takes_a_memory_past_64_tags(rig):
    m, _ = await rig.engine.writes.write(
        NewMemory(content="tagged", tags=[f"t{i}" for i in range(60)]), Caller())
    error = await rig.error("memory_tag", id=m.id, add=[f"u{i}" for i in range(10)])
    assert error["code"] == -32602 and "64 tags" in error["message"]
    assert len((await rig.result("memory_read", id=m.id))["tags"]) == 60


async def test_a_name_that_is_not_utf8_is_reported_and_every_reply_still_encodes(make_rig):
    """A file whose name is not UTF-8 (a sync or a hand brought it) is not indexed and is
    listed with its reason, both at start-up and when it arrives later; `stats` answers
    (the name escaped) instead of dropping the connection, and the rest is indexed."""
    root, start = make_rig
    folder = root / "categories" / "knowledge"
    folder.mkdir(parents=True)
    (folder / "fine.md").write_text("a fine note")
    bad = os.fsencode(folder) + b"/caf\xe9-before.md"
    with open(bad, "wb") as out:
        out.write(b"# Before\n\nwritten before the start\n")
    rig = await start()
    later = os.fsencode(folder) + b"/caf\xe9-after.md"
    with open(later, "wb") as out:
        out.write(b"# After\n\nwritten while it runs\n")
    await rig.sync(os.fsdecode(later)[len(str(root)) + 1:])
    reply = await rig.call("stats")
    assert "result" in reply, reply
    rejected = await rig.rejected()
    assert set(rejected) == {"categories/knowledge/caf\\udce9-before.md",
                             "categories/knowledge/caf\\udce9-after.md"}
    assert all("not UTF-8" in reason for reason in rejected.values())
    assert (await rig.result("memory_search", query="fine"))["total"] == 1
    assert (await rig.result("memory_search", query="written"))["total"] == 0
