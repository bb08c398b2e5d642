"""HybridIndex: keeps the corpus and the vector store in step with the memories.

Called from the engine's writer thread after each file and keyword-index change,
so a client's next smart search sees its write. A conversation turn gets a
context embedding (previous, own and next turn); a new turn also changes its
neighbours' context, so they are re-embedded too (about 3 model calls a turn).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import TYPE_CHECKING

import numpy as np
import structlog

from memoryd.lang import terms
from memoryd.rebuild import RebuildProgress
from memoryd.retrieval import chunks, neighbours, snapshot
from memoryd.retrieval.ahead import Ahead
from memoryd.retrieval.chunks import Span
from memoryd.retrieval.corpus import Corpus
from memoryd.retrieval.neighbours import Neighbour
from memoryd.retrieval.vectors import text_hash  # chromadb loads on use
from memoryd.schema import Memory

if TYPE_CHECKING:
    from memoryd.ports import Embedder, VectorStore


log = structlog.get_logger("memoryd.retrieval")
Fetch = Callable[[list[str]], list[Memory]]
Piece = tuple[Memory, int, str]  # a memory, the index of one of its chunks, its text
EMBED_BATCH = 256


class HybridIndex:
    def __init__(self, embedder: Embedder, vectors: VectorStore) -> None:
        self.embedder = embedder
        self.vectors = vectors
        self.corpus = Corpus(embedder.dim)
        self.model = embedder.model_id
        # What a write deferred to keep it off its reply's path (`flush_deferred`):
        # turns whose context vector is still their own, and own vectors (already in
        # the corpus) not yet persisted in the vector store.
        self.stale_context: set[str] = set()
        self.unpersisted: dict[str, tuple[str, np.ndarray, str]] = {}
        # A change reached the catalog but not the corpus (the vectors failed): no
        # snapshot may record this corpus; the next start catches up from an older one.
        self.diverged = False
        self._ahead = Ahead(lambda: self.corpus, embedder)

    @property
    def waits_for_vectors(self) -> bool:
        """Writing what was deferred now would wait for the vector store to start
        (chroma's import and open: most of a second)."""
        return bool(self.unpersisted or self.stale_context) and not self.vectors.ready

    def adopt(self, corpus: Corpus, stale_context: Iterable[str]) -> None:
        """Serve `corpus` (a snapshot's; start-up, writer thread)."""
        self.corpus = corpus
        self.stale_context = set(stale_context)
        self.unpersisted = {}
        self.diverged = False

    # -- what the engine asks of the corpus (each takes the corpus's read lock) ----
    def nearest(self, scope: str, queries: np.ndarray, per_query: int, *,
                kind: str | None = None, not_kind: str | None = None,
                recent: int | None = None) -> list[list[Neighbour]]:
        return neighbours.nearest(self.corpus, scope, queries, per_query, kind=kind,
                                  not_kind=not_kind, recent=recent)

    def centroid(self, scope: str, exclude: str | None = None) -> np.ndarray | None:
        return neighbours.centroid(self.corpus, scope, exclude)

    def own_vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        return neighbours.own_vectors(self.corpus, ids)

    def capture(self, epoch: str, generation: int,
                collections: list[str] | None) -> snapshot.Captured:
        """What a snapshot of the corpus holds, taken under its write lock (dead rows
        compacted away). Write it before the corpus changes again: only the writer
        thread changes it."""
        with self.corpus.lock.write():
            return snapshot.capture(self.corpus, epoch, generation, self.model,
                                    self.stale_context, collections)

    def footprint(self) -> dict[str, int]:
        """The bytes the corpus holds, by part (Corpus.footprint), under its read hold."""
        with self.corpus.lock.read():
            return self.corpus.footprint()

    def counts(self) -> dict[str, int]:
        """Vectors ranking reads (own, chunk), and those the vector store still lacks."""
        return {**neighbours.counts(self.corpus), "unpersisted": len(self.unpersisted)}

    # -- one memory at a time (writer thread) -----------------------------------
    def embed_ahead(self, memories: list[Memory]) -> Future[None] | None:
        """Start embedding the texts `upsert_many` will need for `memories`, the one
        place a write's embedding starts early (retrieval/ahead.py). Safe from any
        thread; the future of the texts' embedding (None: nothing to embed)."""
        return self._ahead.stage(memories)

    def upsert_many(self, memories: list[Memory], fetch: Fetch, defer: bool = False) -> int:
        """Index these memories: one model call for their texts, one for the contexts.
        With `defer`, the corpus (what ranking reads) has them at once, and the rest
        waits for `flush_deferred`: the contexts (until then a new turn's context
        vector is its own) and persisting the vectors. Returns how many were embedded."""
        texts = {m.id: terms.index_text(m) for m in memories}
        hashes = {i: text_hash(t) for i, t in texts.items()}
        fresh: list[Memory] = []
        with self.corpus.lock.write():
            for memory in memories:
                meta = self.corpus.meta_of(memory.id)
                if meta is not None and meta.holds(memory, hashes[memory.id]):
                    self.corpus.refresh(memory)  # tags, category, access counts: same vectors
                else:
                    fresh.append(memory)
        if not fresh:
            return 0
        self.vectors.warm()  # their vectors go to the store: it opens while they embed
        spans = {m.id: found for m in fresh if (found := _spans(m))}
        pieces = _pieces(fresh, spans)
        embedded = self.embedder.embed([texts[m.id] for m in fresh] + [p[2] for p in pieces])
        vectors, chunk_vectors = embedded[:len(fresh)], embedded[len(fresh):]
        touched: set[str] = set()
        stale_chunks: dict[str, list[str]] = {}
        with self.corpus.lock.write():
            rows: list[int] = []
            for memory, own in zip(fresh, vectors, strict=True):
                old = self.corpus.chunks.get(memory.id)
                keep = len(spans.get(memory.id, []))
                if old is not None and len(old[0]) > keep:
                    stale_chunks.setdefault(memory.scope, []).extend(
                        f"{memory.id}#{n}" for n in range(keep, len(old[0])))
                touched.update(i for i in self.corpus.neighbours(memory.id) if i)
                rows.append(self.corpus.put(
                    memory, terms.index_terms(memory, texts[memory.id]), own,
                    hashes[memory.id], place=False))
                touched.update(i for i in self.corpus.neighbours(memory.id) if i)
                touched.add(memory.id)
            self.corpus.place(rows)
            self._set_chunks(fresh, spans, chunk_vectors)
            self.corpus.compact()
            self._train_cells()
        for scope, ids in stale_chunks.items():
            self.vectors.delete(scope, ids, ("chunk",))
        if pieces:
            self._store_chunks(pieces, chunk_vectors)
        # The vector store gets them later, in a batch (`persist_deferred`): a chroma
        # upsert of one vector would be most of a write's acknowledgement.
        for memory, vector in zip(fresh, vectors, strict=True):
            self.unpersisted[memory.id] = (memory.scope, vector, hashes[memory.id])
        if defer:
            self.stale_context.update(touched)
            return len(fresh)
        self._refresh_context(sorted(touched), fetch, {m.id: m for m in memories})
        return len(fresh)

    def _set_chunks(self, memories: list[Memory], spans: dict[str, list[Span]],
                    vectors: np.ndarray) -> None:
        """Each memory's chunk vectors (hold the corpus write lock): `vectors` holds them in
        the order `_pieces` gave; a memory without spans has none (any old ones go)."""
        at = 0
        for memory in memories:
            mine = spans.get(memory.id, [])
            self.corpus.set_chunks(memory.id, vectors[at:at + len(mine)], mine)
            at += len(mine)

    def _train_cells(self) -> None:
        """Make or remake the dense index's cells when due (hold the write lock)."""
        started = time.monotonic()
        made = self.corpus.train_cells()
        if made:
            log.info("index.cells.trained", rows=self.corpus.trained, cells=made,
                     seconds=round(time.monotonic() - started, 3))

    def _store_chunks(self, pieces: list[Piece], vectors: np.ndarray) -> None:
        by_scope: dict[str, list[int]] = {}
        for k, (memory, _, _) in enumerate(pieces):
            by_scope.setdefault(memory.scope, []).append(k)
        for scope, picks in by_scope.items():
            self.vectors.upsert("chunk", scope, [f"{pieces[k][0].id}#{pieces[k][1]}"
                                                 for k in picks], vectors[picks],
                                [text_hash(pieces[k][2]) for k in picks], self.model)

    def flush_deferred(self, fetch: Fetch) -> int:
        """Persist the own vectors and embed the context vectors deferred so far
        (writer thread). Returns how many contexts were embedded."""
        self.persist_deferred()
        ids, self.stale_context = sorted(self.stale_context), set()
        self._refresh_context(ids, fetch, {})
        return len(ids)

    def persist_deferred(self) -> int:
        """Write the own vectors not yet in the vector store, in one upsert per scope
        (writer thread; the daemon does it each second). A crash before this loses
        nothing: the corpus snapshot is only saved after it, and a start re-embeds
        what the vector store lacks. Returns how many were written.

        They stay counted in `unpersisted` until the vector store has them (`stats`
        reads it from another thread: a kill just after it says 0 loses nothing), and
        stay there for the next round when the store fails. Only this thread changes
        `unpersisted`."""
        pending = dict(self.unpersisted)
        with self.corpus.lock.read():  # deleted or replaced since: nothing to persist
            live = [(i, v) for i, v in pending.items()
                    if (meta := self.corpus.meta_of(i)) is not None and meta.text_hash == v[2]]
        if live:
            self._store("own", [v[0] for _, v in live], [i for i, _ in live],
                        np.stack([v[1] for _, v in live]), [v[2] for _, v in live])
        for memory_id in pending:
            del self.unpersisted[memory_id]
        return len(live)

    def _store(self, kind: str, scopes: list[str], ids: list[str], vectors: np.ndarray,
               hashes: list[str]) -> None:
        """Persist vectors: one chroma upsert per scope (a collection pair per scope)."""
        by_scope: dict[str, list[int]] = {}
        for n, scope in enumerate(scopes):
            by_scope.setdefault(scope, []).append(n)
        for scope, picks in by_scope.items():
            self.vectors.upsert(kind, scope, [ids[n] for n in picks], vectors[picks],
                                [hashes[n] for n in picks], self.model)

    def delete(self, memory_id: str, scope: str, fetch: Fetch) -> None:
        with self.corpus.lock.write():
            neighbours = [i for i in self.corpus.neighbours(memory_id) if i is not None]
            had = self.corpus.chunks.get(memory_id)
            self.corpus.remove(memory_id)
            self.corpus.compact()
        self.vectors.delete(scope, [memory_id])
        if had is not None:
            self.vectors.delete(scope, [f"{memory_id}#{n}" for n in range(len(had[0]))],
                                ("chunk",))
        self._refresh_context(neighbours, fetch, {})

    def _refresh_context(self, ids: list[str], fetch: Fetch, known: dict[str, Memory]) -> None:
        """Re-embed the context of these turns from their current neighbours."""
        with self.corpus.lock.read():
            plans = [(i, *self.corpus.neighbours(i)) for i in ids if self.corpus.is_turn(i)]
        if not plans:
            return
        need = {x for plan in plans for x in plan if x is not None and x not in known}
        memories = dict(known)
        memories.update((m.id, m) for m in fetch(sorted(need)))
        texts, targets = [], []
        for memory_id, prev, nxt in plans:
            if memory_id not in memories:
                continue
            texts.append(terms.context_text(memories.get(prev) if prev else None,
                                           memories[memory_id],
                                           memories.get(nxt) if nxt else None))
            targets.append(memory_id)
        if not texts:
            return
        vectors = self.embedder.embed(texts)
        with self.corpus.lock.write():
            for memory_id, vector in zip(targets, vectors, strict=True):
                self.corpus.set_vectors(memory_id, ctx=vector)
        self._store("ctx", [memories[i].scope for i in targets], targets, vectors,
                    [text_hash(t) for t in texts])

    # -- everything at once (start-up, rebuild, model change) --------------------
    def reconcile(self, memories: Iterable[Memory], force: bool = False,
                  progress: RebuildProgress | None = None) -> dict[str, int]:
        """Load stored vectors; embed what is missing, stale or from another model."""
        progress = progress or RebuildProgress()
        stored: dict[tuple[str, str, str], tuple[np.ndarray, str]] = {}
        self.vectors.migrate(None if force else self.model)
        for kind, scope, ids, vecs, hashes in [] if force else self.vectors.scan(self.model):
            for memory_id, vec, h in zip(ids, vecs, hashes, strict=True):
                stored[(kind, scope, memory_id)] = (vec, h)
        by_id: dict[str, Memory] = {}
        corpus = self.corpus = Corpus(self.embedder.dim)
        zero = np.zeros(self.embedder.dim, dtype=np.float32)
        todo_own: list[tuple[Memory, str]] = []
        with corpus.lock.write():
            for memory in memories:
                by_id[memory.id] = memory
                own_text = terms.index_text(memory)
                own_hash = text_hash(own_text)
                corpus.put(memory, terms.index_terms(memory, own_text), zero, own_hash)
                hit = stored.pop(("own", memory.scope, memory.id), None)
                if hit is not None and hit[1] == own_hash:
                    corpus.set_vectors(memory.id, own=hit[0], ctx=hit[0])
                else:
                    todo_own.append((memory, own_text))
        todo_ctx: list[tuple[Memory, str]] = []
        with corpus.lock.write():
            for memory in by_id.values():
                if not corpus.is_turn(memory.id):
                    stored.pop(("ctx", memory.scope, memory.id), None)
                    continue
                prev, nxt = corpus.neighbours(memory.id)
                ctx_text = terms.context_text(by_id.get(prev) if prev else None, memory,
                                             by_id.get(nxt) if nxt else None)
                hit = stored.pop(("ctx", memory.scope, memory.id), None)
                if hit is not None and hit[1] == text_hash(ctx_text):
                    corpus.set_vectors(memory.id, ctx=hit[0])
                else:
                    todo_ctx.append((memory, ctx_text))
        todo_chunks = self._reconcile_chunks(by_id.values(), stored)
        total = len(todo_own) + len(todo_ctx) + sum(map(len, todo_chunks.values()))
        if total:
            log.info("index.embedding", texts=total, model=self.model)
        progress.begin("embedding", total)
        self._embed_all("own", todo_own, progress)
        self._embed_all("ctx", todo_ctx, progress)
        self._embed_chunks(todo_chunks, by_id, progress)
        with corpus.lock.write():
            self._train_cells()
        self.diverged = False
        orphans: dict[tuple[str, str], set[str]] = {}
        for kind, scope, memory_id in stored:
            orphans.setdefault((kind, scope), set()).add(memory_id)
        for (kind, scope), gone in orphans.items():
            self.vectors.delete(scope, sorted(gone), (kind,))
        return {"vectors_embedded": total, "vectors_removed": sum(map(len, orphans.values())),
                "memories": len(by_id)}

    def _reconcile_chunks(self, memories: Iterable[Memory],
                          stored: dict[tuple[str, str, str], tuple[np.ndarray, str]]
                          ) -> dict[str, list[Span]]:
        """Long notes take their stored chunk vectors when every one is current;
        returns the spans of the notes whose chunks must be embedded."""
        todo: dict[str, list[Span]] = {}
        for memory in memories:
            spans = _spans(memory)
            hits = [stored.pop(("chunk", memory.scope, f"{memory.id}#{n}"), None)
                    for n in range(len(spans))]
            if not spans:
                continue
            if all(h is not None and h[1] == text_hash(memory.content[a:b])
                   for h, (a, b) in zip(hits, spans, strict=True)):
                with self.corpus.lock.write():
                    self.corpus.set_chunks(memory.id, np.stack([h[0] for h in hits if h]),
                                           spans)
            else:
                todo[memory.id] = spans
        return todo

    def _embed_chunks(self, todo: dict[str, list[Span]], memories: dict[str, Memory],
                      progress: RebuildProgress) -> None:
        ids = list(todo)
        for start in range(0, len(ids), EMBED_BATCH // 8):
            batch = [memories[i] for i in ids[start:start + EMBED_BATCH // 8]]
            pieces = _pieces(batch, todo)
            vectors = self.embedder.embed([t for _, _, t in pieces])
            with self.corpus.lock.write():
                self._set_chunks(batch, todo, vectors)
            self._store_chunks(pieces, vectors)
            progress.advance(len(pieces))

    def _embed_all(self, kind: str, todo: list[tuple[Memory, str]],
                   progress: RebuildProgress) -> None:
        for start in range(0, len(todo), EMBED_BATCH):
            batch = todo[start:start + EMBED_BATCH]
            vectors = self.embedder.embed([t for _, t in batch])
            with self.corpus.lock.write():
                for (memory, _), vector in zip(batch, vectors, strict=True):
                    if kind == "own":
                        self.corpus.set_vectors(memory.id, own=vector, ctx=vector)
                    else:
                        self.corpus.set_vectors(memory.id, ctx=vector)
            self._store(kind, [m.scope for m, _ in batch], [m.id for m, _ in batch], vectors,
                        [text_hash(t) for _, t in batch])
            progress.advance(len(batch))


def _pieces(memories: list[Memory], spans: dict[str, list[Span]]) -> list[Piece]:
    """(memory, chunk index, chunk text) of every chunk of these memories, in order."""
    return [(m, n, m.content[a:b]) for m in memories
            for n, (a, b) in enumerate(spans.get(m.id, []))]


def _spans(memory: Memory) -> list[Span]:
    """What of a note is embedded apart from the whole: its title, when it has one (a
    question that paraphrases a title finds the note by it, however long the note), and
    its chunks when long. Turns have their context instead."""
    if memory.kind != "note":
        return []
    title = chunks.title_span(memory.content)
    return ([title] if title else []) + chunks.chunk(memory.content)
