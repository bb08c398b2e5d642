"""Writes that a connection has received but not yet run: their texts are embedded
ahead, and only the embedder's cache changes (fake embedder, real files)."""

from __future__ import annotations

from datetime import UTC, datetime

from memoryd.engine import NewMemory
from memoryd.lang.terms import index_text_of
from memoryd.scopes import Caller

DAY = datetime(2024, 5, 1, 9, 30, tzinfo=UTC)


async def test_prepared_writes_are_embedded_before_they_run(engine) -> None:
    embedder = engine.stores.hybrid.embedder
    bot = Caller(agent="agent:bot")
    news = [NewMemory(content=f"  heron sighting number {i} by the lake ", created_at=DAY)
            for i in range(3)]
    refused = [NewMemory(content="   "),  # nothing to embed
               NewMemory(content="the other agent's plan", scope="agent:other", created_at=DAY)]
    ahead = engine.writes.prepare([*news, *refused], bot)
    assert ahead is not None
    ahead.result()
    assert index_text_of("the other agent's plan", DAY) not in embedder._cache, \
        "a write the caller may not make is not embedded"
    assert engine.catalog.reader.count_rows() == 0, "preparing writes nothing"
    calls = embedder.calls
    results = await engine.writes.write_many(news, bot)
    assert [created for _, created in results] == [True, True, True]
    assert embedder.calls == calls, "every text was embedded ahead"
    assert engine.writes.prepare(refused, bot) is None
