"""Embedding ahead: a write's texts go to the model while the writer makes its files
durable, so a commit costs about the longer of the two, not their sum. `Ahead.stage`
is the one place that starts it (HybridIndex.embed_ahead)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from memoryd.lang import terms
from memoryd.retrieval.corpus import Corpus
from memoryd.retrieval.vectors import text_hash
from memoryd.schema import Memory

if TYPE_CHECKING:
    from memoryd.ports import Embedder


class Ahead:
    def __init__(self, corpus: Callable[[], Corpus], embedder: Embedder) -> None:
        self.current = corpus  # the index's corpus now (a snapshot's replaces the first)
        self.embedder = embedder
        # Which known memories' texts changed is read here (the corpus may be locked).
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="embed-ahead")

    def stage(self, memories: list[Memory]) -> Future[None] | None:
        """Start embedding the texts `upsert_many` will need for `memories` (the one
        place a write's embedding starts early): a unit of work stages its memories
        here, when it is queued or else at its commit, so the model runs while the
        writer makes their files durable and a commit costs about the longer of the
        two, not their sum; a connection's writes still waiting behind others are
        staged here too (Writes.prepare). A new memory's text is queued for the
        embedder's model threads at once (`Embedder.prefetch`); which texts of known
        memories changed is read in a thread of its own (the corpus may be locked).
        `upsert_many` finds the vectors in the embedder's cache, or waits for those
        still being made. Safe from any thread; the future of the texts' embedding
        (None: nothing to embed)."""
        # A memory without a row is new: nothing to compare. The row map is read
        # without the lock: a stale answer costs a cache hit or an embedding in
        # upsert_many, never a wrong vector.
        rows = self.current().row_of
        new = [m for m in memories if m.id not in rows]
        known = [m for m in memories if m.id in rows] if len(new) < len(memories) else []
        fresh = self.embedder.prefetch([terms.index_text(m) for m in new]) if new else None
        if not known:
            return fresh
        changed: Future[None] = Future()
        self._thread.submit(self._prefetch_changed_texts, known, changed)
        if fresh is None:
            return changed
        both: Future[None] = Future()  # done when both are; failed if either failed
        fresh.add_done_callback(lambda f: changed.add_done_callback(
            lambda c: _settle(both, f if f.exception() is not None else c)))
        return both

    def _prefetch_changed_texts(self, memories: list[Memory], made: Future[None]) -> None:
        try:
            texts = [terms.index_text(m) for m in memories]
            corpus = self.current()
            with corpus.lock.read():
                wanted = [t for m, t in zip(memories, texts, strict=True)
                          if (meta := corpus.meta_of(m.id)) is None
                          or not meta.holds(m, text_hash(t))]
            queued = self.embedder.prefetch(wanted)
        except BaseException as failure:
            made.set_exception(failure)
            raise
        if queued is None:
            made.set_result(None)
        else:  # ends with the model's work, which this thread does not wait for
            queued.add_done_callback(lambda f: _settle(made, f))


def _settle(made: Future[None], done: Future[None]) -> None:
    """`made` ends as `done` did."""
    failure = done.exception()
    if failure is not None:
        made.set_exception(failure)
    else:
        made.set_result(None)
