"""The watcher and the daemon's own writes: a file written in place right after the
daemon wrote it, keeping its size, mtime and inode (an edit within the file system's
clock tick does), is still picked up. watchfiles reports such a file as `added` only
(its `modified` is folded into the rename that made it), so neither the events nor
the stamp can tell it from the daemon's own write: the watcher reads what it syncs.
Real files, SQLite and inotify; the fake embedder and in-memory vectors."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import trio

from memoryd.server import watcher
from memoryd.server.watcher import watch_files
from memoryd.store.files import stamp


def _edit_in_place_keeping_the_stamp(path: Path, old: str, new: str) -> None:
    """Another program's edit that leaves size, mtime and inode as they were."""
    assert len(old) == len(new)
    before = path.stat()
    with path.open("r+", encoding="utf-8") as fh:
        text = fh.read()
        fh.seek(0)
        fh.write(text.replace(old, new))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert stamp(path.stat()) == stamp(before)


async def test_an_edit_in_place_right_after_the_daemons_write_is_picked_up(rig):
    synced: list[str] = []
    real_sync = rig.engine.sync.sync_paths

    async def sync_paths(paths, folders=()):
        result = await real_sync(paths, folders)
        synced.extend(paths)
        return result

    rig.engine.sync.sync_paths = sync_paths  # type: ignore[method-assign]
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch_files, rig.engine, 0.05, stop)
        probe = rig.root / "categories" / "knowledge" / "probe.md"
        with trio.fail_after(30):  # the watch is set up once a file written by hand shows
            while "categories/knowledge/probe.md" not in synced:
                probe.write_text(f"a note written by hand {len(synced)}\n")
                await trio.sleep(0.2)
        m = await rig.result("memory_write", content="the kettle is in the attic",
                             category="knowledge")
        relpath = f"categories/knowledge/{m['id']}.md"
        _edit_in_place_keeping_the_stamp(rig.root / relpath, "attic", "shed!")
        with trio.fail_after(30):
            while (await rig.result("memory_read", id=m["id"]))["content"] != (
                    "the kettle is in the shed!"):
                await trio.sleep(0.05)
        stop.set()


async def test_the_watches_are_set_up_off_the_event_loop(rig, monkeypatch):
    """Setting the watches up walks every folder (0.4 s at 130,000 files): the event
    loop, and the start-up beside it, go on meanwhile; a stop ends the watching."""
    setting_up, released = threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def slow_watch(*paths, stop_event, **options):
        setting_up.set()
        seen["loop ran meanwhile"] = released.wait(timeout=2)  # the event loop sets it
        deadline = time.monotonic() + 10
        while not stop_event.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)
        seen["stopped"] = stop_event.is_set()
        yield from ()

    monkeypatch.setattr(watcher, "watch", slow_watch)
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch_files, rig.engine, 0.05, stop)
        with trio.fail_after(30):
            while not setting_up.is_set():
                await trio.sleep(0.01)
        released.set()
        stop.set()
    assert seen == {"loop ran meanwhile": True, "stopped": True}
