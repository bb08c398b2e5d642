"""Hand edits: watch categories/ and sessions/, re-index what changed.

watchfiles delivers a burst of writes as many small batches, so changed paths
collect in a dirty set and are synced after `quiet_period` without new events.
The engine compares each file's sha256 with the index, so the events of the
daemon's own writes cost a hash and change nothing.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import structlog
import trio
from watchfiles import Change, DefaultFilter, watch
from watchfiles.main import FileChange

from memoryd.engine import Engine
from memoryd.store.files import UnsafePath
from memoryd.store.walk import TMP_PREFIX, WATCHED_DIRS

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


async def watch_files(engine: Engine, quiet_period: float, stop: trio.Event,
                      on_ready: Callable[[], None] = lambda: None) -> None:
    """Watch until `stop`. `on_ready` is called on the event loop once the watches are
    set up: from then on every change raises an event."""
    root = engine.root
    dirty: set[str] = set()
    folders: set[str] = set()
    changed = trio.Event()
    token = trio.lowlevel.current_trio_token()
    halt = threading.Event()  # the watching thread's stop

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

    def note(changes: set[FileChange]) -> None:  # on the event loop
        for _change, path in changes:
            try:
                rel = engine.relpath(path)
            except UnsafePath:  # reported through a link: never followed
                log.warning("watcher.outside_root", path=path)
                continue
            if engine.is_memory_file(rel):
                dirty.add(rel)
            elif rel not in WATCHED_DIRS:
                folders.add(rel)
        changed.set()

    def watching() -> None:
        """On a thread of its own: setting the watches up walks every folder's entries
        (0.4 s at 130,000 files), which would hold up the event loop, and with it the
        start-up that runs beside it. The first batch, empty after `rust_timeout`
        without a change, comes once they are set up."""
        ready = False
        for changes in watch(*(root / name for name in WATCHED_DIRS),
                             watch_filter=MemoryFileFilter(), stop_event=halt, debounce=400,
                             step=50, rust_timeout=1000, yield_on_timeout=True,
                             raise_interrupt=False):
            if not ready:
                ready = True
                trio.from_thread.run_sync(on_ready, trio_token=token)
            if changes:
                trio.from_thread.run_sync(note, changes, trio_token=token)

    async def halt_on_stop() -> None:
        await stop.wait()
        halt.set()

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sync_when_quiet)
            nursery.start_soon(halt_on_stop)
            await trio.to_thread.run_sync(watching, abandon_on_cancel=True)
            nursery.cancel_scope.cancel()
    finally:  # cancelled (the daemon stops): the thread ends within a step
        halt.set()
