"""expire, decay and upgrade, driven with an injected clock (no real waiting)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
import trio
import trio.testing

from memoryd.errors import InvalidParams, NotFound
from memoryd.jobs import decay, expire, upgrade
from memoryd.jobs.scheduler import Scheduler
from memoryd.scopes import Caller

NOW = datetime.now(UTC)


async def test_expire_moves_inbox_memories_past_their_ttl_to_trash(harness):
    engine = harness.engine
    old = await harness.write("an idea from last month")
    organized = await harness.write("kept: it is organized", category="knowledge")
    later = NOW + timedelta(days=8)
    planned = await expire.run(engine, later, dry_run=True)
    assert [c.id for c in planned] == [old]
    assert (await engine.reads.read(old, Caller())).content == "an idea from last month"
    done = await expire.run(engine, later, dry_run=False)
    assert [(c.id, c.action) for c in done] == [(old, "trash")]
    assert (engine.root / done[0].to).exists()
    with pytest.raises(NotFound):
        await engine.reads.read(old, Caller())
    assert (await engine.reads.read(organized, Caller())).phase == "organized"
    assert await expire.run(engine, NOW + timedelta(days=6), dry_run=False) == []


async def test_decay_trashes_old_never_accessed_organized_notes(harness):
    engine = harness.engine
    stale = await harness.write("stale fact", category="knowledge",
                                created_at=NOW - timedelta(days=45))
    read_once = await harness.write("looked at once", category="knowledge",
                                    created_at=NOW - timedelta(days=45))
    fresh = await harness.write("fresh fact", category="knowledge",
                                created_at=NOW - timedelta(days=5))
    await engine.reads.read(read_once, Caller())  # counted in the stats buffer, not yet flushed
    assert [c.id for c in await decay.run(engine, NOW, dry_run=True)] == [stale]
    await engine.flush_stats()
    assert [c.id for c in await decay.run(engine, NOW, dry_run=False)] == [stale]
    for kept in (read_once, fresh):
        assert (await engine.reads.read(kept, Caller())).content


async def test_upgrade_promotes_inbox_memories_read_three_times(harness):
    engine = harness.engine
    popular = await harness.write("a popular idea")
    quiet = await harness.write("a quiet idea")
    for _ in range(3):
        await engine.reads.read(popular, Caller())
    await engine.reads.read(quiet, Caller())
    planned = await upgrade.run(engine, NOW, dry_run=True)
    name = planned[0].path.rsplit("/", 1)[1]  # the file keeps its name: a-popular-idea-…
    assert name.startswith("a-popular-idea-") and planned[0].path.startswith("categories/inbox/")
    assert [(c.id, c.to) for c in planned] == [(popular, f"categories/knowledge/{name}")]
    assert (await engine.reads.read(popular, Caller(), count_access=False)).phase == "inbox"
    done = await upgrade.run(engine, NOW, dry_run=False)
    assert [c.id for c in done] == [popular]
    moved = await engine.reads.read(popular, Caller(), count_access=False)
    assert (moved.phase, moved.category, moved.expires_at) == ("organized", "knowledge", None)
    assert (engine.root / done[0].to).exists()
    assert await upgrade.run(engine, NOW, dry_run=False) == []


async def test_run_now_reports_and_survives_a_failing_job(harness, monkeypatch):
    sched = Scheduler(harness.engine, clock=lambda: NOW)
    with pytest.raises(InvalidParams):
        await sched.run_now("nope")

    async def broken(engine, now, dry_run):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(sched.states["decay"], "fn", broken)
    report = await sched.run_now("decay")
    assert report.error == "RuntimeError: disk on fire" and report.changes == []
    assert sched.states["decay"].last_result["error"] == "RuntimeError: disk on fire"
    report = await sched.run_now("expire", dry_run=True)
    assert report.error is None and sched.states["expire"].last_run is None


async def test_scheduler_fires_on_time_and_coalesces_missed_runs(harness, monkeypatch,
                                                                  autojump_clock):
    start = NOW
    fake = {"offset": 0.0}

    def clock() -> datetime:
        return start + timedelta(seconds=trio.current_time() + fake["offset"])

    runs: list[datetime] = []

    async def counted(engine, now, dry_run):
        runs.append(now)
        return []

    harness.engine.config.jobs.upgrade = "10m"
    sched = Scheduler(harness.engine, clock=clock)
    sched.states = {"upgrade": sched.states["upgrade"]}
    monkeypatch.setattr(sched.states["upgrade"], "fn", counted)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(sched.run_forever)
        await trio.sleep(35 * 60)
        assert len(runs) == 3, runs  # at 10, 20 and 30 minutes
        fake["offset"] += 3 * 3600  # the laptop slept three hours
        await trio.sleep(45)
        assert len(runs) == 4, "eighteen missed runs coalesce into one"
        nursery.cancel_scope.cancel()
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(runs)]
    assert gaps[:2] == pytest.approx([600, 600], abs=1)
    assert sched.describe()[0]["next_run"] > runs[-1]
