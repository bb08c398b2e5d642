"""Syncing files with the index: a file that only arrived (renamed into place, as the
daemon's own writes are) with the stamp it was indexed with is not read again; any
other file is read and compared, whatever its stamp says. The real watcher tells the
two apart. Real files and SQLite; the fake embedder and in-memory vectors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import trio

from memoryd.server.watcher import watch_files
from memoryd.store.files import stamp
from tests.rig import Rig


@pytest.fixture
async def rig(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    rig = Rig(root)
    await rig.start()
    yield rig
    rig.close()


def _count_reads(rig: Rig) -> list[str]:
    files = rig.engine.sync.files
    real = files.read_stamped
    reads: list[str] = []

    def read_stamped(relpath: str):
        reads.append(relpath)
        return real(relpath)

    files.read_stamped = read_stamped  # type: ignore[method-assign]
    return reads


def _edit_in_place_keeping_the_stamp(path: Path, old: str, new: str) -> None:
    """Another program's edit that leaves size, mtime and inode as they were (as one
    within the clock tick of the daemon's write can)."""
    assert len(old) == len(new)
    before = path.stat()
    with path.open("r+", encoding="utf-8") as fh:
        text = fh.read()
        fh.seek(0)
        fh.write(text.replace(old, new))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert stamp(path.stat()) == stamp(before)


async def test_an_arrived_file_as_indexed_is_not_read_again(rig):
    m = await rig.result("memory_write", content="the kettle is in the attic",
                         category="knowledge")
    relpath = f"categories/knowledge/{m['id']}.md"
    reads = _count_reads(rig)
    assert await rig.engine.sync.sync_paths([relpath], arrived=[relpath]) == {
        "added": [], "updated": [], "deleted": []}
    assert reads == []
    await rig.engine.sync.sync_paths([relpath])  # not known to have only arrived
    assert reads == [relpath]


async def test_a_file_written_in_place_is_read_whatever_its_stamp(rig):
    m = await rig.result("memory_write", content="the kettle is in the attic",
                         category="knowledge")
    relpath = f"categories/knowledge/{m['id']}.md"
    _edit_in_place_keeping_the_stamp(rig.root / relpath, "attic", "shed!")
    # were it passed as arrived, its stamp would be believed: the watcher never does
    # that for a file with a `modified` event (next test)
    assert (await rig.engine.sync.sync_paths([relpath], arrived=[relpath]))["updated"] == []
    assert (await rig.engine.sync.sync_paths([relpath]))["updated"] == [relpath]
    assert (await rig.result("memory_read", id=m["id"]))["content"] == "the kettle is in the shed!"


async def test_the_watcher_does_not_read_own_writes_and_reads_in_place_edits(rig):
    synced: list[list[str]] = []
    real_sync = rig.engine.sync.sync_paths

    async def sync_paths(paths, folders=(), arrived=()):
        result = await real_sync(paths, folders, arrived)
        synced.append(list(paths))
        return result

    rig.engine.sync.sync_paths = sync_paths  # type: ignore[method-assign]

    async def until_synced(relpath: str) -> None:
        with trio.fail_after(30):
            while not any(relpath in paths for paths in synced):
                await trio.sleep(0.02)

    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch_files, rig.engine, 0.05, stop)
        probe = rig.root / "categories" / "knowledge" / "probe.md"
        probe.parent.mkdir(parents=True, exist_ok=True)
        with trio.fail_after(30):  # the watch is set up when a file written by hand shows
            while not any("categories/knowledge/probe.md" in paths for paths in synced):
                probe.write_text(f"a note written by hand {len(synced)}\n")
                await trio.sleep(0.2)
        reads = _count_reads(rig)
        m = await rig.result("memory_write", content="the kettle is in the attic",
                             category="knowledge")
        relpath = f"categories/knowledge/{m['id']}.md"
        await until_synced(relpath)
        assert relpath not in reads, "the daemon's own write is not read back"

        synced.clear()
        _edit_in_place_keeping_the_stamp(rig.root / relpath, "attic", "shed!")
        await until_synced(relpath)
        assert relpath in reads
        got = await rig.result("memory_read", id=m["id"])
        assert got["content"] == "the kettle is in the shed!"
        stop.set()
