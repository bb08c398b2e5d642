"""The search pipeline's own threads: the query is embedded beside the keyword scoring
while a core is idle, on the search's own thread when every core is busy, and what
goes wrong there reaches the caller."""

from __future__ import annotations

import threading

import pytest

from memoryd.retrieval import pipeline, scoring
from memoryd.retrieval.pipeline import SearchRequest
from tests.fakes import FakeEmbedder, MemoryVectors

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


async def _search_watched(make_harness, monkeypatch, patience: float
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
    found = await h.call("memory_smart_search", query=QUERY)
    assert [m["id"] for m in found["memories"]][:1] == [key]
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
