"""ChromaVectors: chromadb, the persistent home of the embeddings (ports.VectorStore).

Searches do not query it: ranking scores the corpus's copy of the vectors in process
(retrieval/cells.py). It is what a full rebuild reads back instead of embedding
every memory again. A collection per kind and scope. No documents are stored (the
keyword index holds the text) and no embedding function is set (we always pass
vectors), so chroma never reaches for the network.

Each stored vector carries its label: LABEL trailing components that hold the hash of
the text it embeds and a tag of the model, so reconciliation re-embeds exactly what is
missing or stale. The label is part of the one record chroma writes, so no crash can
pair a vector with another's label (a table of our own beside chroma could not be
written in one step with it), and it costs chroma no more than the vector: two metadata
keys cost 9-12% of the daemon's CPU a bulk write (and an upsert without metadata keeps a
record's old metadata). Collections an older memoryd wrote keep the label in metadata
(`h`, `m`); `migrate` moves them at the next full rebuild.
Embedded (`PersistentClient` under index/chroma) by default; `vectors.url`
points at a `chroma run` server instead.

Once open, chroma keeps each collection it wrote to in memory, its HNSW index with
every vector (at 100,000 memories about 150 MB a kind, for a graph nothing here
queries). So a client nothing used for a while is closed (`release`, on the writer
thread, the only one that uses it after the start): chroma's System stops and frees
its indexes, and the next write opens it again, which costs a fraction of a second.

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
import uuid
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import numpy as np
import structlog

if TYPE_CHECKING:  # chromadb loads on first use: its import costs seconds
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection
    from chromadb.config import Settings

log = structlog.get_logger("memoryd.vectors")

KINDS = ("own", "ctx", "chunk")  # chunk: a long note's chunks, ids `<memory id>#<n>`
BATCH = 1000
# Nothing queries chroma's own HNSW graph (ranking scores the corpus's vectors), so a new
# collection builds a cheap one: at its defaults (M 16, ef 100) an upsert cost 0.2 ms a
# vector at 500 stored, 0.45 ms at 4,000 and growing; with these, about 0.11 ms flat.
# Chroma fixes both when a collection is made: older collections keep theirs. The l2
# space keeps a vector as given; a cosine collection normalises it, which moves the
# last bit of a label's components (`unlabel` rounds them back all the same).
HNSW = {"hnsw:space": "l2", "hnsw:M": 4, "hnsw:construction_ef": 10}
HASH_BYTES = 12
# A label's components: the text's hash and the model's tag, 16 bits in each (whole
# numbers below 65,536 are exact in float32, and in a server's JSON).
LABEL = (HASH_BYTES + 4) // 2
LABELLED = {"layout": "labelled"}  # in a collection's metadata


def text_hash(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=HASH_BYTES).hexdigest()


def model_tag(model: str) -> bytes:
    return hashlib.blake2b(model.encode(), digest_size=4).digest()


def collection_name(kind: str, scope: str) -> str:
    """A labelled collection's name (an older memoryd's were `<kind>-<digest>`)."""
    return f"{kind}-labelled-{hashlib.sha1(scope.encode()).hexdigest()[:20]}"


def label(vectors: np.ndarray, hashes: list[str], model: str) -> np.ndarray:
    """The vectors with their labels appended (`hashes` are `text_hash`es)."""
    if not all(map(_is_hash, hashes)):
        raise ValueError(f"a text hash is not {HASH_BYTES} bytes of hex")
    tag = model_tag(model)
    raw = b"".join(bytes.fromhex(h) + tag for h in hashes)
    labels = np.frombuffer(raw, dtype=">u2").reshape(len(hashes), LABEL)
    return np.hstack([np.asarray(vectors, dtype=np.float32), labels.astype(np.float32)])


def unlabel(stored: np.ndarray, model: str) -> tuple[np.ndarray, list[str | None]]:
    """The vectors without their labels, and each one's text hash: None where the label
    names another model or is not a label at all (a damaged record is re-embedded)."""
    vectors, labels = stored[:, :-LABEL], stored[:, -LABEL:]
    near = np.rint(labels)
    whole = np.all((near >= 0) & (near < 65536) & (np.abs(labels - near) < 0.25), axis=1)
    raw = np.where(whole[:, None], near, 0).astype(">u2")
    tag = np.frombuffer(model_tag(model), dtype=">u2")
    ours = whole & np.all(raw[:, HASH_BYTES // 2:] == tag, axis=1)
    return vectors, [row[:HASH_BYTES // 2].tobytes().hex() if ok else None
                     for row, ok in zip(raw, ours, strict=True)]


def stored_collection_ids(db: Path) -> list[str]:
    """The collection ids in an embedded store's SQLite file, read-only; [] when there
    is no file yet (a new store has none). sqlite3.Error when it cannot be read."""
    if not db.exists():
        return []
    return sorted(_stored_column(db, "SELECT id FROM collections", timeout=1))


def ids_on_disk(path: Path) -> list[str] | None:
    """The collection ids in the SQLite file of the embedded store at `path`, read
    without a client; None when the file cannot be read (a client then sets the
    damaged store aside)."""
    try:
        return stored_collection_ids(path / "chroma.sqlite3")
    except sqlite3.Error:
        return None


def _stored_column(db: Path, sql: str, *args: str, timeout: float) -> list[str]:
    """The first column of a query of an embedded store's SQLite file, read-only.

    The one place memoryd reads chroma's own tables (`collections.id`, `segments.id`
    and `segments.collection`), for two things chroma's public API does not offer: a
    store's collection ids without starting its client (importing chromadb and starting
    its System cost about 1 s of CPU, a third of a start that only checks the snapshot),
    and a collection's segment ids, to remove the folders `delete_collection` leaves on
    disk (chroma-core/chroma#5259). A chroma that renames them fails here: the ids then
    come from the client, and a dropped collection's folders stay."""
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=timeout)
    try:
        return [str(row[0]) for row in conn.execute(sql, args)]
    finally:
        conn.close()


def _open_embedded(path: Path, settings: Settings) -> tuple[ClientAPI, Path | None]:
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


class ChromaVectors:
    def __init__(self, path: Path, url: str | None = None) -> None:
        self.path, self.url = path, url
        # Where an unreadable store was moved when it opened (then rebuilt empty).
        self.set_aside: Path | None = None
        self._collections: dict[tuple[str, str], Collection] = {}
        self._opened: Future[object] = Future()
        self._opening = threading.Lock()  # held by whoever opens (once)
        self._started = False
        self.last_used = time.monotonic()  # when a collection was last asked for

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
        self.last_used = time.monotonic()
        if self._claim():
            self._open()
        return self._opened.result()

    def close(self) -> None:
        """Release the client (chroma shares one system per path in a process)."""
        if not self._started:
            return  # never opened: nothing to release
        self._shut(self._opened)

    def _shut(self, opened: Future[object]) -> None:
        """The client `opened` holds closed (once it is open), and its collections
        forgotten; nothing when it failed to open."""
        if opened.exception() is not None:  # (waits for an open under way)
            return
        close = getattr(opened.result(), "close", None)
        if close is not None:
            close()
        self._collections.clear()

    @property
    def pid(self) -> int | None:
        return None  # in this process, or a server's

    def unused_for(self) -> float | None:
        """Seconds since it was last used, while open; None when it is not (any
        thread: a glance, before asking the writer thread to `release`)."""
        return time.monotonic() - self.last_used if self._opened.done() else None

    def release(self, idle: float) -> bool:
        """Close the client when nothing used it for `idle` seconds, freeing the
        indexes chroma keeps in memory; the next use opens it again. Whether it did.
        Only on the thread that uses it (the writer), never while it opens."""
        with self._opening:
            if not (self._started and self._opened.done()):
                return False
            if time.monotonic() - self.last_used < idle:
                return False
            opened = self._opened
            self._opened, self._started = Future(), False
        self._shut(opened)
        log.info("vectors.released", idle_s=round(idle, 1))
        return True

    def _collection(self, kind: str, scope: str) -> Collection:
        self.last_used = time.monotonic()
        key = (kind, scope)
        col = self._collections.get(key)
        if col is None:
            col = self.client.get_or_create_collection(
                collection_name(kind, scope), embedding_function=None,
                metadata={"scope": scope, "kind": kind, **LABELLED, **HNSW})
            self._collections[key] = col
        return col

    def upsert(self, kind: str, scope: str, ids: list[str], vectors: np.ndarray,
               hashes: list[str], model: str) -> None:
        """Store vectors, each labelled with the hash of its text and the model."""
        col = self._collection(kind, scope)
        for start in range(0, len(ids), BATCH):
            end = start + BATCH
            col.upsert(ids=ids[start:end],
                       embeddings=label(vectors[start:end], hashes[start:end], model))

    def delete(self, scope: str, ids: list[str], kinds: tuple[str, ...] = ("own", "ctx")
               ) -> None:
        """These ids from these kinds (a memory's chunks are `<id>#<n>` in `chunk`). An
        older memoryd's collections are left: what they hold is only read by `migrate`,
        which skips what is newer, and a vector for a deleted memory is an orphan."""
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
        return None if self.url or self.ready else ids_on_disk(self.path)

    def _listed(self) -> Iterator[tuple[str, str, bool, Any]]:
        """(kind, scope, labelled, collection) of each of our collections."""
        for col in self.client.list_collections():
            meta = col.metadata or {}
            kind, scope = meta.get("kind"), meta.get("scope")
            if kind in KINDS and isinstance(scope, str):
                yield kind, scope, meta.get("layout") == LABELLED["layout"], col

    def scan(self, model: str) -> Iterator[tuple[str, str, list[str], np.ndarray, list[str]]]:
        """Every stored vector `model` made: (kind, scope, ids, vectors, text hashes), in
        batches. A store with no collection (a new one) is not opened for it."""
        if self._stored_ids() == []:
            return
        for kind, scope, labelled, col in list(self._listed()):
            if not labelled:
                continue  # an older memoryd's: `migrate` moves it
            self._collections[(kind, scope)] = col
            for ids, stored, _ in _batches(col, ["embeddings"]):
                vectors, hashes = unlabel(stored, model)
                keep = [n for n, h in enumerate(hashes) if h is not None]
                if keep:
                    # Only the hashes that are set are kept: str, not str | None.
                    yield (kind, scope, [ids[n] for n in keep], vectors[keep],
                           [hashes[n] for n in keep])  # type: ignore[misc]

    def migrate(self, model: str | None) -> int:
        """Move the vectors `model` made from an older memoryd's collections (their labels
        in metadata) into labelled ones, then drop those collections (all of them, kept
        or not: None keeps none). A vector the labelled collection already has for an id
        was written since, and stays. Safe to stop at any point: a collection is dropped
        only once its vectors are moved. Returns how many moved."""
        if self._stored_ids() == []:
            return 0
        older = [(kind, scope, col) for kind, scope, labelled, col in self._listed()
                 if not labelled]
        if not older:
            return 0
        log.info("vectors.migrating", collections=len(older), keep=model is not None)
        started, moved = time.monotonic(), 0
        for kind, scope, col in older:
            if model is not None:
                target = self._collection(kind, scope)
                newer = set(target.get(include=[])["ids"])
                for ids, stored, metas in _batches(col, ["embeddings", "metadatas"]):
                    keep = [n for n, (i, meta) in enumerate(zip(ids, metas, strict=True))
                            if i not in newer and (meta or {}).get("m") == model
                            and _is_hash((meta or {}).get("h"))]
                    if keep:
                        self.upsert(kind, scope, [ids[n] for n in keep], stored[keep],
                                    [metas[n]["h"] for n in keep], model)
                        moved += len(keep)
            segments = self._segment_ids(str(col.id))
            self.client.delete_collection(col.name)
            self._remove_segments(segments)
        log.info("vectors.migrated", vectors=moved,
                 seconds=round(time.monotonic() - started, 1))
        return moved

    def _segment_ids(self, collection_id: str) -> list[str]:
        """The ids of an embedded store's segments of this collection ([] for a server):
        only ids that are UUIDs, so each names a folder right under the store's path."""
        if self.url:
            return []
        try:
            rows = _stored_column(self.path / "chroma.sqlite3",
                                  "SELECT id FROM segments WHERE collection = ?",
                                  collection_id, timeout=5)
        except sqlite3.Error as exc:  # another chroma's tables: its folders stay
            log.warning("vectors.segments_unread", collection=collection_id, error=str(exc))
            return []
        found = []
        for row in rows:
            with contextlib.suppress(ValueError):
                found.append(str(uuid.UUID(row)))
        return found

    def _remove_segments(self, segments: list[str]) -> None:
        """Remove what a dropped collection's segments left on disk: chroma's
        `delete_collection` leaves their directories (chroma-core/chroma#5259), 1.6 KB a
        vector. Each is a directory named by its id right under the store's path."""
        for segment in segments:
            folder = self.path / segment
            if folder.is_dir() and not folder.is_symlink():
                shutil.rmtree(folder)
                log.info("vectors.segment_removed", path=str(folder))


def _is_hash(value: object) -> bool:
    if not isinstance(value, str) or len(value) != HASH_BYTES * 2:
        return False
    try:
        bytes.fromhex(value)
    except ValueError:
        return False
    return True


def _batches(col: Any, include: list[str]
             ) -> Iterator[tuple[list[str], np.ndarray, list[dict[str, Any]]]]:
    """A collection's records, BATCH at a time: (ids, vectors, metadatas or [])."""
    offset = 0
    while True:
        got = col.get(include=include, limit=BATCH, offset=offset)
        if not got["ids"]:
            return
        yield (list(got["ids"]), np.asarray(got["embeddings"], dtype=np.float32),
               list(got.get("metadatas") or []))
        offset += len(got["ids"])
