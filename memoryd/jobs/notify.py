"""notify: reminders that are due are announced once.

Each is marked in its file (`notified_at`), sent as `notifications/reminder` to
every subscribed connection that may see its scope, shown on the desktop where
possible, and listed in pending.md (rewritten atomically) for agents to read
when they start.
"""

from __future__ import annotations

from datetime import datetime

import trio

from memoryd.errors import NotFound
from memoryd.jobs.needs import JobEngine
from memoryd.jobs.report import Change
from memoryd.reminders import desktop
from memoryd.schema import Memory

PENDING = "pending.md"


def render_pending(reminders: list[Memory], now: datetime) -> str:
    lines = ["# Pending reminders", "",
             f"Due reminders, newest first (written by memoryd at {now:%Y-%m-%d %H:%M %Z}). "
             "Delete a reminder with `memoryctl delete ID` once it is done.", ""]
    for r in reminders:
        due = r.due_at.astimezone(now.tzinfo) if r.due_at else None
        lines.append(f"- [ ] {due:%Y-%m-%d %H:%M} {r.content} (`{r.id}`)" if due
                     else f"- [ ] {r.content} (`{r.id}`)")
    if not reminders:
        lines.append("Nothing is due.")
    return "\n".join(lines) + "\n"


async def run(engine: JobEngine, now: datetime, dry_run: bool) -> list[Change]:
    changes = []
    for reminder in await engine.reads.due_reminders(now):
        changes.append(Change(id=reminder.id, action="notify",
                              before={"due_at": reminder.due_at.isoformat()
                                      if reminder.due_at else None},
                              after={"notified_at": now.isoformat()}))
        if dry_run:
            continue
        try:
            await engine.writes.mark_notified(reminder.id, now)
        except NotFound:
            continue
        engine.announce("notifications/reminder", {
            "id": reminder.id, "content": reminder.content,
            "due_at": reminder.due_at.isoformat() if reminder.due_at else None,
            "scope": reminder.scope}, reminder.scope)
        if engine.config.notify.desktop:
            await trio.to_thread.run_sync(desktop.notify, "memoryd reminder", reminder.content)
    if not dry_run and (changes or not engine.has_file(PENDING)):
        body = render_pending(await engine.reads.announced_reminders(), now).encode()
        await engine.write_generated(PENDING, body)
    return changes
