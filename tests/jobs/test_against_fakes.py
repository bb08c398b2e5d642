"""Jobs against a fake engine: a job is written against jobs/needs.py (JobEngine), so a
few lines of fake stand in for the engine, its files and its indexes, and what the
job decided is checked alone (the jobs' tests with the real engine are beside these)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

from memoryd.config import parse_config
from memoryd.errors import NotFound
from memoryd.jobs import expire, notify, upgrade
from memoryd.schema import Memory

NOW = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)


class FakeEngine:
    """What a job may ask of the engine, answered from lists; what it did, recorded."""

    def __init__(self, **reads: Any) -> None:
        self.config = parse_config({"notify": {"desktop": False}})  # no pop-up here
        self.done: list[tuple[str, Any]] = []
        self.files: dict[str, bytes] = {}
        self.gone: set[str] = set()  # ids deleted meanwhile: NotFound
        answers = dict(reads)

        async def answer(name: str, *_: Any) -> Any:
            return answers[name]

        def reading(name: str) -> Any:
            return lambda *args: answer(name, *args)

        self.reads = SimpleNamespace(**{name: reading(name) for name in answers})
        self.writes = SimpleNamespace(delete=self._delete, mark_notified=self._notified,
                                      upgrade=self._upgrade)

    async def _delete(self, memory_id: str, caller: Any) -> str:
        self._exists(memory_id)
        self.done.append(("delete", memory_id))
        return f"trash/{memory_id}.md"

    async def _notified(self, memory_id: str, when: datetime) -> Memory:
        self._exists(memory_id)
        self.done.append(("notified", memory_id))
        return Memory(id=memory_id, content="x", notified_at=when)

    async def _upgrade(self, memory_id: str, category: str | None, caller: Any) -> Memory:
        self._exists(memory_id)
        self.done.append(("upgrade", memory_id))
        return Memory(id=memory_id, content="x", category="knowledge", phase="organized")

    def _exists(self, memory_id: str) -> None:
        if memory_id in self.gone:
            raise NotFound(memory_id)

    def trash_path(self, path: str, memory_id: str) -> str:
        return f"trash/{path.rsplit('/', 1)[0]}/{memory_id}.md"

    def path_of(self, memory: Memory, current: str | None = None) -> str:
        name = current.rsplit("/", 1)[-1] if current else f"{memory.id}.md"
        return f"categories/{memory.category}/{name}"

    def has_file(self, path: str) -> bool:
        return path in self.files

    def announce(self, method: str, params: dict[str, Any], scope: str) -> None:
        self.done.append((method, params["id"]))

    async def write_generated(self, path: str, body: bytes) -> None:
        self.files[path] = body


async def test_expire_trashes_what_the_reads_found_and_skips_what_went_meanwhile():
    engine = FakeEngine(expired_inbox=[("a", "categories/inbox/a.md"),
                                       ("b", "categories/inbox/b.md")])
    engine.gone.add("b")
    planned = await expire.run(engine, NOW, dry_run=True)
    assert [(c.id, c.to) for c in planned] == [("a", "trash/categories/inbox/a.md"),
                                                ("b", "trash/categories/inbox/b.md")]
    assert engine.done == [], "a dry run changes nothing"
    changes = await expire.run(engine, NOW, dry_run=False)
    assert [(c.id, c.to) for c in changes] == [("a", "trash/a.md")]
    assert engine.done == [("delete", "a")]


async def test_notify_announces_each_due_reminder_once_and_writes_the_pending_list():
    due = Memory(id="r1", content="call Ann", kind="reminder", category="reminders",
                 due_at=NOW - timedelta(minutes=5))
    engine = FakeEngine(due_reminders=[due], announced_reminders=[due])
    changes = await notify.run(engine, NOW, dry_run=False)
    assert [c.id for c in changes] == ["r1"]
    assert engine.done == [("notified", "r1"), ("notifications/reminder", "r1")]
    assert "call Ann (`r1`)" in engine.files[notify.PENDING].decode()


async def test_upgrade_promotes_only_what_was_read_often_enough():
    engine = FakeEngine(inbox_access_counts={"hot": ("categories/inbox/hot.md", 3),
                                             "cold": ("categories/inbox/cold.md", 1)})
    changes = await upgrade.run(engine, NOW, dry_run=False)
    assert [(c.id, c.path, c.to) for c in changes] == [
        ("hot", "categories/inbox/hot.md", "categories/knowledge/hot.md")]
    assert engine.done == [("upgrade", "hot")]
