"""dream, levels 1-3, and the idle detection that picks them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import trio

from memoryd.jobs import dream
from memoryd.jobs.scheduler import Scheduler
from memoryd.scopes import Caller

NOW = datetime.now(UTC)


async def test_level_1_classifies_the_inbox_in_english_and_chinese(harness):
    engine = harness.engine
    ids = {text: await harness.write(text) for text in [
        "The user prefers dark mode", "我喜欢喝绿茶", "Learned the hard way: rsync needs a "
        "trailing slash", "踩坑：生产库不能直接改表", "We decided to go with Postgres",
        "some words with no cue at all"]}
    planned = await dream.run(engine, NOW, dry_run=True, level=1)
    assert len(planned) == 5
    assert (await engine.reads.read(ids["The user prefers dark mode"], Caller(),
                              count_access=False)).phase == "inbox"
    done = {c.id: c.after["category"] for c in await dream.run(engine, NOW, False, level=1)}
    assert done == {ids["The user prefers dark mode"]: "preferences",
                    ids["我喜欢喝绿茶"]: "preferences",
                    ids["Learned the hard way: rsync needs a trailing slash"]: "lessons",
                    ids["踩坑：生产库不能直接改表"]: "lessons",
                    ids["We decided to go with Postgres"]: "decisions"}
    stays = await engine.reads.read(ids["some words with no cue at all"], Caller())
    assert stays.phase == "inbox"


async def test_level_2_resolves_wikilinks_and_merges(harness):
    engine = harness.engine
    runbook = await harness.write("Atlas runbook\nRestart the workers, then drain the queue",
                                  category="project")
    note = await harness.write("Paged at 3am, followed [[Atlas runbook]] and it worked",
                               category="lessons")
    by_id = await harness.write(f"Also see [[{runbook}]]", category="knowledge")
    await harness.write("Keep the spare key with Ravi", category="knowledge")
    await harness.write("keep the spare key with ravi!", category="knowledge")
    changes = await dream.run(engine, NOW, dry_run=False, level=2)
    assert {c.action for c in changes} >= {"link", "merge"}
    back = {m.id for m in await engine.reads.backlinks(runbook, Caller())}
    assert back == {note, by_id}
    assert runbook in (await engine.reads.read(note, Caller(), count_access=False)).links
    assert len(await engine.reads.notes()) == 4


async def test_level_3_links_entities_across_categories_and_makes_reminders(make_harness):
    h = await make_harness({"timezone": "Asia/Shanghai"})
    engine = h.engine
    wife = await h.write("Anne is my wife", category="people")
    tea = await h.write("Anne prefers jasmine tea", category="preferences")
    other = await h.write("Bob likes coffee", category="preferences")
    dentist = await h.write("Dentist appointment tomorrow at 9 with Dr. Lee",
                            category="date")
    meeting = await h.write("明天下午三点和团队开会", category="project")
    await h.write("The 2019 trip was tomorrow at 9 back then", category="knowledge",
                  created_at=datetime(2019, 5, 1, tzinfo=UTC))  # long past: no reminder
    changes = await dream.run(engine, datetime.now(UTC), dry_run=False, level=3)
    assert tea in (await engine.reads.read(wife, Caller(), count_access=False)).links
    assert other not in (await engine.reads.read(wife, Caller(), count_access=False)).links
    made = {c.id: c.after for c in changes if c.action == "remind"}
    assert set(made) == {dentist, meeting}
    from zoneinfo import ZoneInfo
    sh = ZoneInfo("Asia/Shanghai")
    tomorrow = (datetime.now(sh) + timedelta(days=1)).date()
    due = datetime.fromisoformat(made[meeting]["due_at"]).astimezone(sh)
    assert (due.date(), due.hour) == (tomorrow, 15)
    reminder = await engine.reads.read(made[dentist]["reminder"], Caller(), count_access=False)
    assert reminder.kind == "reminder" and dentist in reminder.links
    again = await dream.run(engine, datetime.now(UTC), dry_run=False, level=3)
    assert not [c for c in again if c.action == "remind"], "one reminder per note"


async def test_idle_detection_deepens_the_level(harness, monkeypatch, autojump_clock):
    levels: list[int] = []

    async def fake(engine, now, dry_run, level=1):
        levels.append(level)
        return []

    idle = {"since": trio.current_time()}
    sched = Scheduler(harness.engine, idle_seconds=lambda: trio.current_time() - idle["since"])
    sched.states = {"dream": sched.states["dream"]}
    monkeypatch.setattr(sched.states["dream"], "fn", fake)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(sched.run_forever)
        await trio.sleep(5 * 60)
        assert levels == []
        await trio.sleep(6 * 60)  # idle 11 min
        assert levels == [1]
        await trio.sleep(20 * 60)  # idle 31 min
        assert levels == [1, 2]
        await trio.sleep(30 * 60)  # idle 61 min
        assert levels == [1, 2, 3]
        await trio.sleep(60 * 60)
        assert levels == [1, 2, 3], "each level once per idle period"
        idle["since"] = trio.current_time()  # somebody asked something
        await trio.sleep(11 * 60)
        assert levels == [1, 2, 3, 1]
        nursery.cancel_scope.cancel()


async def test_reminders_come_from_what_the_user_said_never_from_ingested_notes(make_harness):
    """An ingested note's time is a description (a cutover window, a lunch), and so is
    a user's note that only says when something happens; a note or fact that asks for
    or commits to an action is a plan."""
    h = await make_harness({"timezone": "UTC"})
    ingested = [await h.write(text, source="ingest:logseq", category="knowledge")
                for text in ("Remind me to rotate the keys tomorrow at 9",
                             "The cutover window is Saturday night",
                             "Lunch with the platform team on Friday")]
    described = await h.write("The office is closed tomorrow", category="knowledge")
    plan = await h.write("I need to renew the passport tomorrow at 10", category="date")
    changes = await dream.run(h.engine, datetime.now(UTC), dry_run=True, level=3)
    proposed = {c.id for c in changes if c.action == "remind"}
    assert proposed == {plan}
    assert not proposed & {*ingested, described}


async def test_a_note_about_a_person_is_filed_under_people(make_harness):
    """Preferences and habits are the user's; another person's ("She prefers…") make a
    note about that person, and a note kept under people/ in its source is one."""
    h = await make_harness()
    theirs = await h.write("Maria prefers oat milk and hates early meetings.")
    hers = await h.write("She always takes the 7:40 train.")
    mine = await h.write("I prefer aisle seats on long flights.")
    placed = await h.write("Met at the offsite; works on billing.", source="ingest:logseq",
                           source_path="pages/people___Jonas Weber.md")
    changes = await dream.run(h.engine, NOW, dry_run=True, level=1)
    got = {c.id: (c.after["category"], c.after["by"]) for c in changes}
    assert got == {theirs: ("people", "heuristic"), hers: ("people", "heuristic"),
                   mine: ("preferences", "heuristic"), placed: ("people", "source")}
