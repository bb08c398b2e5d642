"""VectorStore: chromadb, the persistent home of the embeddings.

Searches do not query it: ranking scores the corpus's copy of the vectors in process
(retrieval/cells.py). It is what a full rebuild reads back instead of embedding
every memory again. A collection per kind and scope. No documents are stored (the
keyword index holds the text) and no embedding function is set (we always pass
vectors), so chroma never reaches for the network. Each vector's metadata records
the model and a hash of the text it embeds: reconciliation re-embeds exactly what is
missing or stale.
Embedded (`PersistentClient` under index/chroma) by default; `vectors.url`
points at a `chroma run` server instead.

Opening it is slow (importing chromadb alone is about 1 s of CPU, a third of a start),
and a start from the snapshot, or of a new store, does not need it: the client opens at
its first use, or on a thread of its own at the first write (`warm`), so a daemon that
only reads never imports chromadb. Until then `collection_ids` (the snapshot's check at
start) and `scan` of a store that has no collection yet read an embedded store's SQLite
file.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np
import structlog

log = structlog.get_logger("memoryd.vectors")

KINDS = ("own", "ctx", "chunk")  # chunk: a long note's chunks, ids `<memory id>#<n>`
BATCH = 1000
# Nothing queries chroma's own HNSW graph (ranking scores the corpus's vectors), so a new
# collection builds a cheap one: at its defaults (M 16, ef 100) an upsert cost 0.2 ms a
# vector at 500 stored, 0.45 ms at 4,000 and growing; with these, about 0.11 ms flat.
# Chroma fixes both when a collection is made: older collections keep theirs.
HNSW = {"hnsw:space": "cosine", "hnsw:M": 4, "hnsw:construction_ef": 10}


def text_hash(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def collection_name(kind: str, scope: str) -> str:
    return f"{kind}-{hashlib.sha1(scope.encode()).hexdigest()[:20]}"


def _stored_collection_ids(db: Path) -> list[str]:
    """The collection ids in an embedded store's SQLite file, read-only; [] when there
    is no file yet (a new store has none). sqlite3.Error when it cannot be read."""
    if not db.exists():
        return []
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=1)
    try:
        return sorted(str(row[0]) for row in conn.execute("SELECT id FROM collections"))
    finally:
        conn.close()


def _open_embedded(path: Path, settings: object) -> tuple[object, Path | None]:
    """PersistentClient at `path`, and where a store that could not be opened was set
    aside (it is rebuilt from the files: it is derived data), else None."""
    import chromadb

    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        client = chromadb.PersistentClient(path=str(path), settings=settings)
        client.list_collections()
        return client, None
    except Exception as exc:  # chromadb raises many types for a damaged store
        aside = path.with_name(f"{path.name}.corrupt-{int(time.time())}")
        log.warning("vectors.unreadable", path=str(path), moved_to=str(aside),
                    error=str(exc)[:200])
        with contextlib.suppress(Exception):
            from chromadb.api.shared_system_client import SharedSystemClient
            SharedSystemClient.clear_system_cache()
        shutil.move(str(path), str(aside))
        path.mkdir(mode=0o700)
        return chromadb.PersistentClient(path=str(path), settings=settings), aside


class VectorStore:
    def __init__(self, path: Path, url: str | None = None) -> None:
        self.path, self.url = path, url
        # Where an unreadable store was moved when it opened (then rebuilt empty).
        self.set_aside: Path | None = None
        self._collections: dict[tuple[str, str], object] = {}
        self._opened: Future[object] = Future()
        self._opening = threading.Lock()  # held by whoever opens (once)
        self._started = False

    def _claim(self) -> bool:
        """True for the one caller that is to open the client."""
        with self._opening:
            claimed, self._started = not self._started, True
            return claimed

    def warm(self) -> None:
        """Open the client on a thread of its own, if nothing has opened it yet: each
        write calls this, so the vectors it defers do not wait for the open."""
        if self._claim():
            threading.Thread(target=self._open, name="vectors-open", daemon=True).start()

    def _open(self) -> None:
        started = time.monotonic()
        try:
            import chromadb
            from chromadb.config import Settings

            settings = Settings(anonymized_telemetry=False, allow_reset=False)
            if self.url:
                parsed = urlparse(self.url)
                client = chromadb.HttpClient(
                    host=parsed.hostname or "127.0.0.1", port=parsed.port or 8000,
                    ssl=parsed.scheme == "https", settings=settings)
            else:
                client, aside = _open_embedded(self.path, settings)
                self.set_aside = self.set_aside or aside
            self._opened.set_result(client)
            log.info("vectors.opened", seconds=round(time.monotonic() - started, 3),
                     thread=threading.current_thread().name)
        except BaseException as exc:  # each call that needs the client raises it
            log.error("vectors.open_failed", error=str(exc)[:300],
                      thread=threading.current_thread().name)
            self._opened.set_exception(exc)

    @property
    def ready(self) -> bool:
        """The client is open (or failed to): using it now does not wait."""
        return self._opened.done()

    @property
    def client(self) -> Any:  # chromadb's ClientAPI: chromadb is not imported up here
        """The chroma client: opened here by the first caller, unless `warm` began
        opening it (then this waits for that)."""
        if self._claim():
            self._open()
        return self._opened.result()

    def close(self) -> None:
        """Release the client (chroma shares one system per path in a process)."""
        if not self._started:
            return  # never opened: nothing to release
        try:
            client = self._opened.result()
        except Exception:  # it failed to open: nothing to release
            return
        close = getattr(client, "close", None)
        if close is not None:
            close()
        self._collections.clear()

    def _collection(self, kind: str, scope: str):
        key = (kind, scope)
        col = self._collections.get(key)
        if col is None:
            col = self.client.get_or_create_collection(
                collection_name(kind, scope), embedding_function=None,
                metadata={"scope": scope, "kind": kind, **HNSW})
            self._collections[key] = col
        return col

    def upsert(self, kind: str, scope: str, ids: list[str], vectors: np.ndarray,
               hashes: list[str], model: str, owners: list[str] | None = None) -> None:
        """Store vectors; `owners` (chunks) names the memory each belongs to."""
        col = self._collection(kind, scope)
        metas: list[dict[str, str]] = [{"h": h, "m": model} for h in hashes]
        for meta, owner in zip(metas, owners or [], strict=False):
            meta["of"] = owner
        for start in range(0, len(ids), BATCH):
            end = start + BATCH
            col.upsert(ids=ids[start:end], embeddings=vectors[start:end],
                       metadatas=metas[start:end])  # type: ignore[arg-type]

    def delete(self, scope: str, ids: list[str], kinds: tuple[str, ...] = ("own", "ctx")
               ) -> None:
        """These ids from these kinds (a memory's chunks are `<id>#<n>` in `chunk`)."""
        for kind in kinds:
            for start in range(0, len(ids), BATCH):
                self._collection(kind, scope).delete(ids=ids[start:start + BATCH])

    def collection_ids(self) -> list[str]:
        """The ids of its collections (no index is loaded): a store deleted, replaced or
        pointed elsewhere since has other ids. An embedded store's come from its SQLite
        file while the client is still opening (what the client would list: a file
        that cannot be read so waits for the client, which sets a damaged store aside)."""
        stored = self._stored_ids()
        if stored is not None:
            return stored
        return sorted(str(col.id) for col in self.client.list_collections())

    def _stored_ids(self) -> list[str] | None:
        """An embedded store's collection ids from its SQLite file while the client is
        not open; None when the client is to be asked (a server, an open client, a file
        that cannot be read: the client sets a damaged store aside)."""
        if self.url or self.ready:
            return None
        try:
            return _stored_collection_ids(self.path / "chroma.sqlite3")
        except sqlite3.Error:
            return None

    def scan(self) -> Iterator[tuple[str, str, list[str], np.ndarray, list[dict]]]:
        """Every stored vector: (kind, scope, ids, vectors, metadatas), in batches. A
        store with no collection (a new one) is not opened for it."""
        if self._stored_ids() == []:
            return
        for col in self.client.list_collections():
            meta = col.metadata or {}
            kind, scope = meta.get("kind"), meta.get("scope")
            if kind not in KINDS or not isinstance(scope, str):
                continue
            self._collections[(kind, scope)] = col
            offset = 0
            while True:
                got = col.get(include=["embeddings", "metadatas"], limit=BATCH, offset=offset)
                if not got["ids"]:
                    break
                yield (kind, scope, list(got["ids"]), np.asarray(got["embeddings"],
                       dtype=np.float32), list(got["metadatas"]))
                offset += len(got["ids"])
