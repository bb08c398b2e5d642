"""Snapshots: start-up from `index/corpus.snapshot` instead of from every memory.

`resume` (start-up, writer thread) loads the snapshot and catches up on what the
catalog changed since its generation: rows written since are indexed again (an
unchanged text keeps its vectors; a changed one is embedded), memories gone since
are dropped. It declines (and start-up rebuilds in full) when the snapshot cannot
be trusted, when the vector store it was saved with is gone (a collection id it
recorded is missing: no vector index is loaded to tell), or when so much changed
that a rebuild is as cheap.

`save_blocking` runs in the writer thread: deferred vectors are flushed, the catalog is
checkpointed (so the generation the snapshot names is durable before the snapshot
is), then the file is written. A corpus that missed a change (`hybrid.diverged`) is
never saved. Nor is one resumed from a snapshot whose vector store turned out to be
unreadable as it opened (it is set aside and starts empty: retrieval/vectors.py): the
snapshot is removed instead, so the next start rebuilds and stores every vector again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Protocol

import structlog

from memoryd.retrieval import snapshot
from memoryd.retrieval.hybrid import HybridIndex
from memoryd.schema import Memory

log = structlog.get_logger("memoryd.index")

FILE = "corpus.snapshot"
EVERY_CHANGES = 2000  # a running daemon saves after this many commits...
EVERY_SECONDS = 600.0  # ...or this long after the first unsaved one
REBUILD_SHARE = 4  # more than 1/4 of the rows changed since: rebuild instead


class Recorded(Protocol):
    """What snapshots read of the keyword catalog, on its writer's connection (the
    catalog's Writer is one): which catalog, how far it is, and what changed."""

    @property
    def epoch(self) -> str: ...

    @property
    def generation(self) -> int: ...

    def written_since(self, generation: int) -> list[Memory]: ...

    def id_count(self) -> int: ...

    def ids(self) -> set[str]: ...

    def load(self, ids: Iterable[str]) -> list[Memory]: ...

    def checkpoint(self) -> None: ...


class Snapshots:
    def __init__(self, hybrid: HybridIndex, catalog: Recorded, folder: Path) -> None:
        self.hybrid, self.catalog = hybrid, catalog
        self.path = folder / FILE
        self.saved_generation: int | None = None
        self.saved_at = time.monotonic()
        self.resumed = False  # this run's corpus came from the snapshot

    def read_ahead(self) -> Future[snapshot.Loaded]:
        """Read the snapshot in a thread of its own (the writer thread meanwhile walks
        the folders: both mostly wait on the disk or run in C). Checked against the
        catalog as it is now, before start-up reconciles any file into it: the snapshot
        was saved against that catalog."""
        catalog, hybrid = self.catalog, self.hybrid
        snapshot.remove_temps(self.path.parent, FILE)
        args = (self.path, catalog.epoch, catalog.generation, hybrid.model,
                hybrid.embedder.dim)
        future: Future[snapshot.Loaded] = Future()

        def run() -> None:
            try:
                future.set_result(snapshot.read(*args))
            except BaseException as exc:  # handed to resume(), which re-raises it
                future.set_exception(exc)

        threading.Thread(target=run, name="snapshot-read", daemon=True).start()
        return future

    def resume(self, ahead: Future[snapshot.Loaded]) -> dict[str, Any] | None:
        """Serve the snapshot's corpus (as `read_ahead` read it), caught up with the
        catalog; None: rebuild."""
        catalog, hybrid = self.catalog, self.hybrid
        started = time.monotonic()
        try:
            corpus, header = ahead.result()
        except snapshot.Problem as exc:
            log.info("index.snapshot.unused", path=str(self.path), reason=str(exc))
            return None
        gone_collections = set(header.collections) - set(hybrid.vectors.collection_ids())
        if gone_collections:  # the vector store was deleted, replaced or moved
            log.info("index.snapshot.unused", path=str(self.path),
                     reason=f"{len(gone_collections)} of the vector store's collections are "
                            "gone (deleted, replaced or vectors.url moved)")
            return None
        changed = catalog.written_since(header.generation)
        # Every memory the snapshot lacks was written since: when the catalog holds as
        # many as the snapshot plus those, none of the snapshot's is gone, and the
        # catalog's ids need not be read (0.2 s at 130,000, at every start).
        rows = catalog.id_count()
        if rows == len(corpus.row_of) + sum(1 for m in changed if m.id not in corpus.row_of):
            gone: list[str] = []
        else:
            ids = catalog.ids()
            gone = [i for i in corpus.row_of if i not in ids]
        if len(changed) + len(gone) > max(1000, rows // REBUILD_SHARE):
            log.info("index.snapshot.unused", path=str(self.path),
                     reason=f"{len(changed) + len(gone)} memories changed since it was saved")
            return None
        hybrid.adopt(corpus, header.stale_context)
        for memory_id in gone:
            meta = corpus.meta_of(memory_id)
            assert meta is not None
            hybrid.delete(memory_id, meta.scope, catalog.load)
        embedded = hybrid.upsert_many(changed, catalog.load) if changed else 0
        self.saved_generation = header.generation
        self.resumed = True
        log.info("index.snapshot.loaded", memories=corpus.live, generation=header.generation,
                 caught_up=len(changed), removed=len(gone),
                 seconds=round(time.monotonic() - started, 3))
        return {"memories": corpus.live, "vectors_embedded": embedded,
                "vectors_removed": len(gone), "snapshot_caught_up": len(changed)}

    def due(self) -> bool:
        """Enough changed since the last save (or since start) to save again."""
        unsaved = self.catalog.generation - (self.saved_generation or 0)
        return unsaved >= EVERY_CHANGES or (
            unsaved > 0 and time.monotonic() - self.saved_at >= EVERY_SECONDS)

    def save_blocking(self) -> int | None:
        """Write the snapshot (writer thread); its size in bytes, None if not written."""
        catalog, hybrid = self.catalog, self.hybrid
        if hybrid.diverged:
            log.warning("index.snapshot.skipped", reason="the corpus missed a change; the "
                        "next start catches up from the last snapshot")
            return None
        started = time.monotonic()
        hybrid.flush_deferred(catalog.load)
        catalog.checkpoint()
        generation = catalog.generation
        collections = hybrid.vectors.collection_ids()  # I/O (a server's, too): not locked
        aside = hybrid.vectors.set_aside
        if self.resumed and aside is not None:
            if self.path.exists():
                log.warning("index.snapshot.removed", moved_to=str(aside),
                            reason="the vector store was unreadable and set aside after "
                                   "the snapshot was used; the next start rebuilds it")
            self.path.unlink(missing_ok=True)
            return None
        captured = hybrid.capture(catalog.epoch, generation, collections)
        size = snapshot.write(self.path, captured)  # only this (writer) thread changes it
        self.saved_generation, self.saved_at = generation, time.monotonic()
        log.info("index.snapshot.saved", generation=generation, bytes=size,
                 memories=captured.header.size, seconds=round(time.monotonic() - started, 3))
        return size

    def saved(self) -> bool:
        """The last snapshot saved is of the catalog as it is now."""
        return self.saved_generation == self.catalog.generation
