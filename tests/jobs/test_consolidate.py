"""consolidate merges real duplicates only, loses nothing, and refreshes memory.md."""

from __future__ import annotations

from datetime import UTC, datetime

from memoryd.jobs import consolidate
from memoryd.scopes import Caller
from memoryd.store import frontmatter

NOW = datetime.now(UTC)


async def test_duplicates_merge_into_the_most_accessed(harness):
    engine = harness.engine
    a = await harness.write("The user prefers dark mode", tags=["ui"])
    b = await harness.write("the user prefers Dark Mode!", tags=["editor"])
    peer = await harness.write("The user's editor is Neovim")
    await engine.links.link(a, peer, Caller(), linked=True)
    for _ in range(2):
        await engine.reads.read(b, Caller())
    c = await harness.write("Deploys go through staging first")
    d = await harness.write("Deployments go through staging first")
    planned = await consolidate.run(engine, NOW, dry_run=True)
    assert {(ch.id, ch.after["replaced_by"]) for ch in planned} == {(a, b), (d, c)}
    assert (await engine.reads.read(a, Caller(), count_access=False)).content
    assert not (engine.root / "memory.md").exists(), "a dry run writes nothing"
    done = await consolidate.run(engine, NOW, dry_run=False)
    assert {ch.id for ch in done} == {a, d}
    kept = await engine.reads.read(b, Caller(), count_access=False)
    assert set(kept.tags) == {"ui", "editor"} and kept.replaces == [a]
    assert kept.links == [peer] and kept.access_count == 2
    assert (await engine.reads.read(peer, Caller(), count_access=False)).links == [b]
    trashed = list((engine.root / "trash").rglob(f"{a}.md"))
    assert len(trashed) == 1
    assert frontmatter.parse(trashed[0].read_text(), "x").memory.replaced_by == b
    found = await harness.call("memory_smart_search", query="dark mode")
    assert [m["id"] for m in found["memories"]][:1] == [b]
    index = (engine.root / "memory.md").read_text()
    assert "# What is remembered" in index and "- inbox: 3" in index
    assert await consolidate.run(engine, NOW, dry_run=False) == []


async def test_look_alikes_that_differ_are_never_merged(harness):
    engine = harness.engine
    prefix = "Project Atlas runbook, step by step, for the on-call engineer who is paged " \
             "at night: first "
    await harness.write(prefix + "restart the ingest workers and watch the queue drain")
    await harness.write(prefix + "fail over the database to the replica in Frankfurt")
    await harness.write("Meeting with Anne on Tuesday at 3pm")
    await harness.write("Meeting with Anne on Wednesday at 3pm")
    await harness.write("The user prefers dark mode", scope="user:ann")
    await harness.write("The user prefers dark mode.", scope="user:bob")
    assert await consolidate.run(engine, NOW, dry_run=False) == []
    assert len(await engine.reads.notes()) == 6
