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

from memoryd.errors import NotFound
from memoryd.server import daemon, watcher
from memoryd.server.watcher import watch_files
from memoryd.store.walk import stamp
from tests.layout import file_of, relpath_of
from tests.rig import Rig


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
        relpath = relpath_of(rig.root, m, "knowledge")
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


async def _restarted(root: Path, memories: list[str]) -> tuple[Rig, list[str]]:
    """A root with these memories written by a first daemon, started again."""
    first = Rig(root)
    await first.start()
    ids = [(await first.result("memory_write", content=text, category="knowledge"))["id"]
           for text in memories]
    first.close()
    rig = Rig(root)
    await rig.engine.sync.startup()
    return rig, ids


async def test_edits_made_before_the_watches_were_up_are_caught_up(tmp_path):
    """Between start-up's walk and the first watch, an edit raises no event: the
    catch-up re-reads the files whose stamp is not the indexed one, and only those."""
    rig, (kept, edited, removed) = await _restarted(
        tmp_path, ["the spare key is under the mat", "the kettle is in the attic",
                   "the ladder is in the garage"])
    try:
        knowledge = tmp_path / "categories" / "knowledge"
        path = file_of(tmp_path, edited, "knowledge")
        path.write_text(path.read_text().replace("attic", "shed"))
        file_of(tmp_path, removed, "knowledge").unlink()
        (knowledge / "by-hand.md").write_text("the bicycle pump is in the hall\n")
        in_flight = knowledge / ".tmp-x.md.1.abcd"  # a write's temp: never removed now
        in_flight.write_text("half")
        caught = await rig.engine.sync.catch_up()
        assert (caught["files_read"], caught["deleted"]) == (2, 1)
        assert (await rig.result("memory_read", id=edited))["content"] == (
            "the kettle is in the shed")
        assert (await rig.error("memory_read", id=removed))["code"] == NotFound.code
        assert (await rig.result("memory_read", id=kept))["content"] == (
            "the spare key is under the mat")
        found = await rig.result("memory_search", query="bicycle pump")
        assert [m["content"] for m in found["memories"]] == ["the bicycle pump is in the hall"]
        assert in_flight.exists()
        again = await rig.engine.sync.catch_up()  # every stamp is the indexed one now
        assert (again["files_read"], again["deleted"]) == (0, 0)
    finally:
        rig.close()


async def test_the_catch_up_compares_in_its_child_and_walks_in_process_without_one(
        tmp_path, monkeypatch):
    """The daemon does not compare 130,000 stamps itself (that held the interpreter
    lock beside the first searches): the child answers what differs. Without a child,
    the walk and the comparison are made in process."""
    rig, (kept, edited) = await _restarted(
        tmp_path, ["the spare key is under the mat", "the kettle is in the attic"])
    try:
        sync = rig.engine.sync
        in_process = sync._reconcile_files

        def not_here(*args, **kwargs):
            raise AssertionError("compared in the daemon")

        monkeypatch.setattr(sync, "_reconcile_files", not_here)
        path = file_of(tmp_path, edited, "knowledge")
        path.write_text(path.read_text().replace("attic", "shed"))
        caught = await sync.catch_up()
        assert (caught["files_read"], caught["deleted"]) == (1, 0)
        assert (await rig.result("memory_read", id=edited))["content"] == (
            "the kettle is in the shed")

        monkeypatch.setattr(sync, "_reconcile_files", in_process)
        monkeypatch.setattr(sync.files, "walk_in_child", lambda *a, **k: None)
        file_of(tmp_path, kept, "knowledge").unlink()
        caught = await sync.catch_up()
        assert (caught["files_read"], caught["deleted"]) == (0, 1)
        assert (await rig.error("memory_read", id=kept))["code"] == NotFound.code
    finally:
        rig.close()


async def test_watch_files_says_when_the_watches_are_up(rig):
    """`on_ready` comes once, when a change made from then on raises an event."""
    synced: list[str] = []
    real_sync = rig.engine.sync.sync_paths

    async def sync_paths(paths, folders=()):
        synced.extend(paths)
        return await real_sync(paths, folders)

    rig.engine.sync.sync_paths = sync_paths  # type: ignore[method-assign]
    ready: list[float] = []
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch_files, rig.engine, 0.05, stop,
                           lambda: ready.append(trio.current_time()))
        with trio.fail_after(30):
            while not ready:
                await trio.sleep(0.01)
        (rig.root / "categories" / "knowledge" / "after.md").write_text("written after\n")
        with trio.fail_after(30):
            while "categories/knowledge/after.md" not in synced:
                await trio.sleep(0.05)
        # More batches of the watch (a second change seen means they came), and still
        # one `on_ready`.
        (rig.root / "categories" / "knowledge" / "later.md").write_text("written later\n")
        with trio.fail_after(30):
            while "categories/knowledge/later.md" not in synced:
                await trio.sleep(0.05)
        stop.set()
    assert len(ready) == 1


async def test_the_daemon_catches_up_once_watching_and_once_started(rig, monkeypatch):
    """The catch-up waits for start-up's end (it needs start-up's walk), then runs
    once for each time the watches are set up."""
    resumed = threading.Event()

    def watch_ready_at_once(*paths, stop_event, **options):
        yield set()  # the watches are up
        resumed.set()  # the daemon has taken the first batch: on_ready has run
        while not stop_event.is_set():
            time.sleep(0.01)

    monkeypatch.setattr(watcher, "watch", watch_ready_at_once)
    calls: list[int] = []

    async def catch_up():
        calls.append(1)
        return {"files_read": 0, "deleted": 0}

    monkeypatch.setattr(rig.engine.sync, "catch_up", catch_up)
    stop, indexed = trio.Event(), trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(daemon.keep_watching, rig.engine, 0.05, stop, indexed)
        with trio.fail_after(30):
            while not resumed.is_set():
                await trio.sleep(0.01)
        for _ in range(20):
            await trio.sleep(0)
        assert calls == []  # start-up still runs
        indexed.set()
        with trio.fail_after(30):
            while not calls:
                await trio.sleep(0.01)
        stop.set()
    assert calls == [1]


async def test_an_edit_seen_half_saved_loses_no_text(rig):
    """An editor that truncates, then writes: the watcher may read the file between the
    two. The memory leaves the indexes while its file is refused, and the text it held
    is kept as a version; when the file is whole again, history holds both texts."""
    m = await rig.result("memory_write", content="the kettle is in the attic",
                         category="knowledge")
    path = relpath_of(rig.root, m, "knowledge")
    whole = (rig.root / path).read_text()
    (rig.root / path).write_text("---\nid: [unclosed\n")  # half-saved: not front matter
    await rig.engine.sync.sync_paths([path])
    assert (await rig.error("memory_read", id=m["id"]))["code"] == NotFound.code
    (rig.root / path).write_text(whole.replace("attic", "shed"))
    await rig.engine.sync.sync_paths([path])
    history = await rig.result("memory_history", id=m["id"])
    assert [v["content"] for v in history["versions"]] == [
        "the kettle is in the attic", "the kettle is in the shed"]
    assert history["versions"][-1]["current"]
