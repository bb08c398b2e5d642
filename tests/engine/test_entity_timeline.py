"""An entity's memories over time, with the facts that were true before them."""

from __future__ import annotations


async def test_an_entitys_timeline_shows_what_a_fact_replaced(rig):
    await rig.result("memory_add", text="I live in Paris.")
    await rig.result("memory_add", text="Big news: I moved to Berlin last month.")
    got = await rig.result("memory_entities", name="berlin")
    lines = [(m["content"], m["superseded_at"] is not None) for m in got["memories"]]
    assert [superseded for _, superseded in lines] == [True, False]  # oldest first
    assert "Paris" in lines[0][0] and "Berlin" in lines[1][0]
    assert got["entities"][0]["memories"] == 1  # the count: what is current
