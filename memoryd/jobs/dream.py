"""dream: tidy memory while the user is away, in three depths.

1 light:  classify inbox memories into the 14 categories: by the LLM when llm.url is
          set, else (and for whatever it leaves unanswered) by English and Chinese cues
2 medium: 1 + merge similar memories (consolidate) + resolve [[wikilinks]] into
          bidirectional links (memory_backlinks sees them)
3 deep:   2 + link memories about the same entity across categories, and turn
          notes and facts the user gave an agent into reminders linked to them, where
          a sentence names a future time ("tomorrow at 9", "明天下午三点") and asks
          for or commits to an action there (lang/intents.py); never ingested
          notes, whose times describe rather than plan

Run by idle detection (no requests for dream.idle_after: level 1, three times as
long: 2, six times: 3) or by hand (`memoryctl dream --level N`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memoryd.config import zone
from memoryd.dream import llm_classify
from memoryd.dream.links import cross_category_pairs, wikilink_targets
from memoryd.engine.requests import NewMemory
from memoryd.errors import NotFound, RpcError
from memoryd.jobs import consolidate
from memoryd.jobs.needs import JobEngine
from memoryd.jobs.report import Change
from memoryd.lang import due, intents
from memoryd.lang.classify import classify, place_of
from memoryd.schema import INGEST_PREFIX, Memory
from memoryd.scopes import Caller


async def run(engine: JobEngine, now: datetime, dry_run: bool, level: int = 1) -> list[Change]:
    changes = await _classify(engine, dry_run)
    if level >= 2:
        changes += await consolidate.run(engine, now, dry_run)
        notes = await engine.reads.notes()
        changes += await _link(engine, dry_run, "wikilink",
                               [(a, b, None) for a, b in wikilink_targets(notes)])
    if level >= 3:
        changes += await _link(engine, dry_run, "entity",
                               cross_category_pairs(await engine.reads.notes()))
        changes += await _reminders(engine, now, dry_run)
    return changes


async def _classify(engine: JobEngine, dry_run: bool) -> list[Change]:
    inbox = [m for m in await engine.reads.notes() if m.phase == "inbox" and m.kind == "note"]
    answers: list[str | None] = [None] * len(inbox)
    if engine.llm is not None and inbox:
        answers = await llm_classify.classify(engine.llm, [m.content for m in inbox],
                                              engine.config.llm.batch_size)
    changes = []
    for memory, answer in zip(inbox, answers, strict=True):
        # The source's own structure first (a note under people/ is about a person),
        # then the model's answer, then the cues.
        category, by = place_of(memory.source_path), "source"
        if category is None:
            by = "heuristic" if answer is None else "llm"
            category = classify(memory.content) if answer is None else answer
        if category is None or category == "inbox":
            continue
        if not dry_run:
            try:
                await engine.writes.upgrade(memory.id, category, Caller())
            except (NotFound, RpcError):
                continue
        changes.append(Change(id=memory.id, action="classify", before={"phase": "inbox"},
                              after={"phase": "organized", "category": category, "by": by}))
    return changes


async def _link(engine: JobEngine, dry_run: bool, why: str,
                pairs: Sequence[tuple[str, str, str | None]]) -> list[Change]:
    changes = []
    for source, target, entity in pairs:
        if not dry_run:
            try:
                await engine.links.link(source, target, Caller(), linked=True)
            except (NotFound, RpcError):
                continue
        after = {"linked": target, "by": why} | ({"entity": entity} if entity else {})
        changes.append(Change(id=source, action="link", after=after))
    return changes


def _said_to_an_agent(memory: Memory) -> bool:
    """A note or fact the user gave an agent: not one ingested from notes or documents
    (a time they name is a description, not a plan), nor one dream made itself."""
    return memory.kind in ("note", "fact") and not memory.source.startswith(
        (INGEST_PREFIX, "dream"))


async def _reminders(engine: JobEngine, now: datetime, dry_run: bool) -> list[Change]:
    notes = await engine.reads.notes()
    reminder_ids = {m.id for m in notes if m.kind == "reminder"}
    tz = zone(engine.config.timezone)
    changes = []
    for memory in notes:
        if not _said_to_an_agent(memory) or any(link in reminder_ids for link in memory.links):
            continue
        # "tomorrow" means the day after the note was written, not after tonight's dream
        found = due.find(memory.content, memory.created_at.astimezone(tz))
        if found is None or found.when <= now or not intents.asks_or_commits(
                intents.sentence_at(memory.content, found.span)):
            continue
        reminder_id = None
        if not dry_run:
            reminder, _ = await engine.writes.write(NewMemory(
                content=memory.content[:500], kind="reminder", due_at=found.when,
                scope=memory.scope, tags=["from-dream"], source="dream"), Caller())
            await engine.links.link(memory.id, reminder.id, Caller(), linked=True)
            reminder_id = reminder.id
        changes.append(Change(id=memory.id, action="remind",
                              after={"due_at": found.when.isoformat(), "said": found.text,
                                     "reminder": reminder_id}))
    return changes
