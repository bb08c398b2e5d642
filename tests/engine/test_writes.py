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
    prepared = engine.writes.prepare([*news, *refused], bot)
    assert prepared.embedding is not None
    prepared.embedding.result()
    assert [b is None for b in prepared.built] == [False, False, False, True, True]
    assert index_text_of("the other agent's plan", DAY) not in embedder._cache, \
        "a write the caller may not make is not embedded"
    assert engine.catalog.reader.count_rows() == 0, "preparing writes nothing"
    calls = embedder.calls
    results = await engine.writes.write_many(news, bot, built=prepared.built)
    assert [r.created for r in results] == [True, True, True]
    assert [r.memory.id for r in results] == [b.memory.id for b in prepared.built[:3]], \
        "the memories built ahead are the ones written"
    assert embedder.calls == calls, "every text was embedded ahead"
    assert engine.writes.prepare(refused, bot).embedding is None


async def test_a_prepared_secret_is_cut_and_counted_once(engine) -> None:
    """A write built ahead is not built again: its secret is cut once, counted once in
    the daemon's totals, and the result says how many were cut (content and title)."""
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    new = NewMemory(content=f"the deploy token is {secret}.", title=f"token {secret}")
    before = sum(engine.stores.redactor.counts().values())
    prepared = engine.writes.prepare([new], Caller())
    (written,) = await engine.writes.write_many([new], Caller(), built=prepared.built)
    assert secret not in written.memory.content and secret not in written.memory.title
    assert written.redacted == 2
    assert sum(engine.stores.redactor.counts().values()) - before == 2


async def test_an_update_says_how_many_secrets_it_cut(engine) -> None:
    from memoryd.engine import Changes

    secret = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    memory, _ = await engine.writes.write(NewMemory(content="the deploy runbook"), Caller())
    updated = await engine.writes.update(memory.id, Changes(
        content=f"rotate {secret} monthly", title=f"{secret} rotation"), Caller())
    assert updated.redacted == 2 and secret not in updated.memory.content + updated.memory.title
    plain = await engine.writes.update(memory.id, Changes(content="rotate it monthly"),
                                       Caller())
    assert plain.redacted == 0
