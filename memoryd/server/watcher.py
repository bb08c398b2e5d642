"""Hand edits: watch categories/ and sessions/, re-index what changed.

watchfiles delivers a burst of writes as many small batches, so changed paths
collect in a dirty set and are synced after `quiet_period` without new events.
The engine compares each file's sha256 with the index, so the events of the
daemon's own writes cost a hash and change nothing.
"""

from __future__ import annotations

import os

import structlog
import trio
from watchfiles import Change, DefaultFilter, awatch

from memoryd.engine import Engine
from memoryd.store.files import TMP_PREFIX, WATCHED_DIRS, UnsafePath

log = structlog.get_logger("memoryd.watcher")


class MemoryFileFilter(DefaultFilter):
    """Markdown files and folders (a folder moved in or out changes the files under it)."""

    def __call__(self, change: Change, path: str) -> bool:
        name = os.path.basename(path)
        if name.startswith(TMP_PREFIX) or name.startswith("."):
            return False
        if not super().__call__(change, path):
            return False
        return name.endswith(".md") or "." not in name


async def watch_files(engine: Engine, quiet_period: float, stop: trio.Event) -> None:
    root = engine.root
    dirty: set[str] = set()
    folders: set[str] = set()
    changed = trio.Event()

    async def sync_when_quiet() -> None:
        nonlocal changed
        while True:
            await changed.wait()
            while True:  # wait for a quiet period
                changed = trio.Event()
                with trio.move_on_after(quiet_period):
                    await changed.wait()
                    continue
                break
            paths, trees = sorted(dirty), sorted(folders)
            dirty.clear()
            folders.clear()
            try:
                result = await engine.sync.sync_paths(paths, trees)
                if any(result.values()):
                    log.info("watcher.synced", **{k: v for k, v in result.items() if v})
            except Exception:
                log.exception("watcher.sync_failed", paths=len(paths))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(sync_when_quiet)
        watched = [root / name for name in WATCHED_DIRS]
        async for changes in awatch(*watched, watch_filter=MemoryFileFilter(),
                                    stop_event=stop, debounce=400, step=50,
                                    rust_timeout=1000):
            for _change, path in changes:
                try:
                    rel = engine.files.relpath(path)
                except UnsafePath:  # reported through a link: never followed
                    log.warning("watcher.outside_root", path=path)
                    continue
                if engine.files.is_memory_path(rel):
                    dirty.add(rel)
                elif rel not in WATCHED_DIRS:
                    folders.add(rel)
            changed.set()
        nursery.cancel_scope.cancel()
