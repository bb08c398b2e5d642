"""The search pipeline's own threads: the query is embedded beside the keyword scoring
while a core is idle, on the search's own thread when every core is busy or other
searches wait for a turn, and what goes wrong there reaches the caller."""

from __future__ import annotations

import contextlib
import threading
from datetime import UTC, datetime

import numpy as np
import pytest

from memoryd.retrieval import corpus as corpus_module
from memoryd.retrieval import pipeline, scoring
from memoryd.retrieval.pipeline import SearchRequest
from memoryd.retrieval.shared_work import SharedWork
from memoryd.schema import Memory
from tests.fakes import FakeEmbedder, MemoryVectors
from tests.retrieval.test_corpus import turn

QUERY = "where does the user keep the deploy key"


class _Watched(FakeEmbedder):
    """Embeds the query once the keyword scoring has begun, or after `patience`
    seconds; notes the thread and whether the scoring had begun."""

    def __init__(self, lexical_began: threading.Event, patience: float) -> None:
        super().__init__()
        self.lexical_began = lexical_began
        self.patience = patience
        self.query_threads: list[tuple[str, bool]] = []

    def embed(self, texts: list[str]):
        if texts == [QUERY]:
            began = self.lexical_began.wait(timeout=self.patience)
            self.query_threads.append((threading.current_thread().name, began))
        return super().embed(texts)


async def _search_watched(make_harness, monkeypatch, patience: float, others_waiting: int = 0
                          ) -> list[tuple[str, bool]]:
    began = threading.Event()
    embedder = _Watched(began, patience)
    h = await make_harness(embedder=embedder, vectors=MemoryVectors())
    key = await h.write("The deploy key lives in the vault under ops/prod")
    await h.write("The user's cat is called Miso")
    lexical = scoring.lexical

    def watched_lexical(*args, **kwargs):
        began.set()
        return lexical(*args, **kwargs)

    monkeypatch.setattr(scoring, "lexical", watched_lexical)
    with contextlib.ExitStack() as waiting:  # searches that asked for a turn before it
        for _ in range(others_waiting):
            waiting.enter_context(h.engine.reads.searcher.wanted())
        found = await h.call("memory_smart_search", query=QUERY)
    assert [m["id"] for m in found["memories"]][:1] == [key]
    assert h.engine.reads.searcher.in_demand == 0, "the search's own count was not released"
    return embedder.query_threads


async def test_with_a_core_idle_the_query_is_embedded_while_the_keywords_are_scored(
        make_harness, monkeypatch):
    monkeypatch.setattr(pipeline, "CORES", 2)
    [(thread, waited)] = await _search_watched(make_harness, monkeypatch, patience=30)
    assert waited, "the query was embedded before the keywords were scored, not beside"
    assert thread.startswith("query-embed")


async def test_with_every_core_busy_the_search_embeds_on_its_own_thread(
        make_harness, monkeypatch):
    """One core, taken by this search: no thread to hand over to; the embedding comes
    first, on the search's thread, as the keywords wait."""
    monkeypatch.setattr(pipeline, "CORES", 1)
    [(thread, waited)] = await _search_watched(make_harness, monkeypatch, patience=0.05)
    assert not waited and not thread.startswith("query-embed")


async def test_with_another_search_waiting_the_search_embeds_on_its_own_thread(
        make_harness, monkeypatch):
    """Two cores and this search alone in `run`, but another one waits for a turn: the
    cores have work, so this one does not hand over to a second thread."""
    monkeypatch.setattr(pipeline, "CORES", 2)
    [(thread, waited)] = await _search_watched(make_harness, monkeypatch, patience=0.05,
                                               others_waiting=1)
    assert not waited and not thread.startswith("query-embed")


async def test_a_failing_query_embedding_fails_the_search(make_harness):
    class Broken(FakeEmbedder):
        def embed(self, texts: list[str]):
            if texts == [QUERY]:
                raise RuntimeError("the model is gone")
            return super().embed(texts)

    h = await make_harness(embedder=Broken(), vectors=MemoryVectors())
    await h.write("The deploy key lives in the vault under ops/prod")
    with pytest.raises(RuntimeError, match="the model is gone"):
        h.engine.reads.searcher.run(SearchRequest(query=QUERY))
    assert (await h.call("memory_smart_search", query="deploy key"))["memories"]


class _Near:
    """Wraps the corpus's `dense_rows`: notes the thread it runs on and whether the
    corpus is held for reading, after `before()`."""

    def __init__(self, corpus, before=lambda: None) -> None:
        self.corpus, self.inner, self.before = corpus, corpus.dense_rows, before
        self.calls: list[tuple[str, int]] = []

    def __call__(self, *args, **kwargs):
        self.before()
        self.calls.append((threading.current_thread().name, self.corpus.lock.readers))
        return self.inner(*args, **kwargs)


async def _ann_harness(make_harness, monkeypatch):
    monkeypatch.setattr(pipeline, "CORES", 2)
    h = await make_harness(embedder=FakeEmbedder(), vectors=MemoryVectors())
    key = await h.write("The deploy key lives in the vault under ops/prod")
    await h.write("The user's cat is called Miso")
    monkeypatch.setattr(h.engine.reads.searcher, "exact_limit", 0)  # the cells' search
    return h, key, h.engine.reads.searcher.hybrid.corpus


async def test_with_a_core_idle_the_nearest_rows_are_found_beside_the_keywords(
        make_harness, monkeypatch):
    h, key, corpus = await _ann_harness(make_harness, monkeypatch)
    near = _Near(corpus)
    monkeypatch.setattr(corpus, "dense_rows", near)
    found = await h.call("memory_smart_search", query=QUERY)
    assert [m["id"] for m in found["memories"]][:1] == [key]
    [(thread, readers)] = near.calls
    assert thread.startswith("query-embed") and readers == 1, "under the search's hold"
    monkeypatch.setattr(pipeline, "CORES", 1)
    await h.call("memory_smart_search", query=QUERY)
    assert not near.calls[1][0].startswith("query-embed")


async def test_a_failing_keyword_stage_waits_for_the_nearest_rows(make_harness, monkeypatch):
    """The other thread reads the corpus under the searching thread's read hold: a
    search that fails keeps the hold until that thread is done."""
    h, _, corpus = await _ann_harness(make_harness, monkeypatch)
    failed = threading.Event()

    def failing_lexical(*args, **kwargs):
        failed.set()
        raise RuntimeError("no keywords today")

    near = _Near(corpus, before=lambda: failed.wait(timeout=30))
    monkeypatch.setattr(corpus, "dense_rows", near)
    monkeypatch.setattr(scoring, "lexical", failing_lexical)
    with pytest.raises(RuntimeError, match="no keywords today"):
        h.engine.reads.searcher.run(SearchRequest(query=QUERY))
    assert near.calls == [(near.calls[0][0], 1)], "the hold outlived the nearest rows"
    assert corpus.lock.readers == 0


async def test_with_a_core_idle_the_search_scores_a_share_of_the_nearest_rows(
        make_harness, monkeypatch):
    """The other thread posts the nearest rows' blocks; the searching thread, done with
    the keywords, scores some of them instead of waiting."""
    h, key, _ = await _ann_harness(make_harness, monkeypatch)
    monkeypatch.setattr(corpus_module, "SCORE_BLOCK", 1)  # a block a row: two blocks
    ran: list[str] = []
    real_map = SharedWork.map

    def watched_map(self, fn, items):
        other = threading.Event()

        def watched(item):
            name = threading.current_thread().name
            ran.append(name)
            if name.startswith("query-embed"):  # leaves the next block to the search
                other.wait(timeout=30)
            else:
                other.set()
            return fn(item)

        return real_map(self, watched, items)

    monkeypatch.setattr(SharedWork, "map", watched_map)
    found = await h.call("memory_smart_search", query=QUERY)
    assert [m["id"] for m in found["memories"]][:1] == [key]
    assert len(ran) == 2 and sum(n.startswith("query-embed") for n in ran) == 1, ran
    monkeypatch.setattr(pipeline, "CORES", 1)  # one thread: nothing to share
    await h.call("memory_smart_search", query=QUERY)
    assert len(ran) == 2


def test_ann_candidates_are_the_nearest_and_best_rows_with_their_turns_neighbours():
    """Rows near the query and the keywords' best, each with the turns before and after
    it in its session, within the filters' mask, ascending."""
    c = corpus_module.Corpus(dim=8)
    for i in range(30):
        memory = (turn(i, f"turn {i}") if i % 4 else
                  Memory(id=f"n{i}", content="n", created_at=datetime(2025, 1, 1, tzinfo=UTC)))
        c.put(memory, ["w"], np.eye(8, dtype=np.float32)[i % 8])
    lex = np.zeros(c.size, dtype=np.float32)
    lex[[3, 9, 17, 22]] = [0.5, 0.9, 0.1, 0.7]
    mask = np.ones(c.size, dtype=bool)
    mask[10] = False
    near = {5, 12}
    top = pipeline.best_rows(lex, 3)
    assert sorted(top.tolist()) == [3, 9, 22]
    expected = set()
    for r in [*near, *top.tolist()]:
        expected |= {r} | {int(x) for x in (c.prev[r], c.next[r]) if x >= 0}
    got = pipeline.ann_candidates(c, near, top, mask)
    assert got.tolist() == sorted(r for r in expected if mask[r])
    # 9's turns are 7 (past the note 8) and 10 (masked); 12 is a note, alone
    assert 10 not in got.tolist() and {6, 7, 12, 21, 23} <= set(got.tolist())
