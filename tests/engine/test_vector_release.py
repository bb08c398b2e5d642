"""The vector store let go of after a quiet spell, and opened again by the next write
with nothing lost (a real chromadb in this process, the fake embedder)."""

from __future__ import annotations

import pytest
import trio

from memoryd.config import Config
from memoryd.engine import NewMemory
from memoryd.retrieval.vectors import ChromaVectors
from memoryd.scopes import Caller
from memoryd.server.wiring import build_engine
from tests.fakes import FakeEmbedder

ME = Caller(agent="agent:bot")


@pytest.fixture
async def engine(tmp_path):
    vectors = ChromaVectors(tmp_path / "index" / "chroma")
    engine = build_engine(tmp_path, Config(), embedder=FakeEmbedder(), vectors=vectors)
    await engine.sync.startup()
    yield engine
    engine.close()


async def _write_and_persist(engine, text: str) -> None:
    await engine.writes.write_many([NewMemory(content=text)], ME)  # (opens the store)
    await trio.to_thread.run_sync(lambda: engine.stores.hybrid.vectors.client)  # open
    await engine.persist_vectors()
    assert not engine.stores.hybrid.unpersisted


async def test_a_store_in_use_is_kept_until_quiet_then_opened_again(engine) -> None:
    vectors = engine.stores.hybrid.vectors
    assert not await engine.release_idle(0.0), "never opened: nothing to let go of"
    await _write_and_persist(engine, "the heron nests by the lake")
    assert not await engine.release_idle(3600.0), "used just now: kept"
    assert vectors.ready and 0 <= vectors.unused_for() < 3600
    assert await engine.release_idle(0.0), "quiet: let go of"
    assert not vectors.ready and vectors.unused_for() is None
    await _write_and_persist(engine, "the heron came back in May")
    stored = {kind: ids for kind, _, ids, _, _ in vectors.scan(engine.stores.hybrid.model)}
    assert len(stored["own"]) == 2, "nothing written was lost to a release"
