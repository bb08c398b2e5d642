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


async def test_a_projects_facts_over_time_with_what_they_replaced(rig):
    scope = "project:demo-0b6c2f3e"
    await rig.result("memory_add", text="We deploy with Jenkins.", scope=scope)
    await rig.result("memory_add", text="We switched from Jenkins to GitHub Actions.",
                     scope=scope)
    await rig.result("memory_add", text="I live in Paris.")  # another scope: not listed
    page = await rig.result("memory_list", scope=scope, kind="fact", order="oldest",
                            replaced=True)
    lines = [(m["content"], m["superseded_at"] is not None) for m in page["memories"]]
    assert page["total"] == 1 and len(lines) == 2, lines
    assert [superseded for _, superseded in lines] == [True, False]  # oldest first
    assert "Jenkins" in lines[0][0] and "GitHub Actions" in lines[1][0]
    plain = await rig.result("memory_list", scope=scope, kind="fact")
    assert [m["superseded_at"] for m in plain["memories"]] == [None]
