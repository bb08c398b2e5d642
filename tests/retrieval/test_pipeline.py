"""The search pipeline's own threads: the query is embedded beside the keyword scoring,
and what goes wrong there reaches the caller."""

from __future__ import annotations

import threading

import pytest

from memoryd.retrieval import scoring
from memoryd.retrieval.pipeline import SearchRequest
from tests.fakes import FakeEmbedder, MemoryVectors

QUERY = "where does the user keep the deploy key"


class _Watched(FakeEmbedder):
    """Embeds the query only once the keyword scoring has begun (else gives up)."""

    def __init__(self, lexical_began: threading.Event) -> None:
        super().__init__()
        self.lexical_began = lexical_began
        self.query_threads: list[tuple[str, bool]] = []

    def embed(self, texts: list[str]):
        if texts == [QUERY]:
            began = self.lexical_began.wait(timeout=30)
            self.query_threads.append((threading.current_thread().name, began))
        return super().embed(texts)


async def test_the_query_is_embedded_while_the_keywords_are_scored(make_harness,
                                                                   monkeypatch):
    began = threading.Event()
    embedder = _Watched(began)
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
    [(thread, waited)] = embedder.query_threads
    assert waited, "the query was embedded before the keywords were scored, not beside"
    assert thread.startswith("query-embed")


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
