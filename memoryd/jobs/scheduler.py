"""Scheduler: APScheduler 3 triggers, trio owns the time.

One trio task per job sleeps until the trigger's next fire time, in slices of at
most 30 s of wall clock (suspend, NTP and DST safe). Missed runs coalesce into
one. A job and `jobs/run` of the same job share a lock, so a job never overlaps
itself. A failing run is logged and reported; the next fire time tries again.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import structlog
import trio

from memoryd.config import zone
from memoryd.errors import InvalidParams
from memoryd.jobs.needs import JobEngine
from memoryd.jobs.report import Change, JobReport
from memoryd.schedule.table import JOBS
from memoryd.schedule.triggers import parse_trigger

log = structlog.get_logger("memoryd.jobs")
JobFn = Callable[..., Awaitable[list[Change]]]  # (engine, now, dry_run, **options)
MAX_SLEEP = 30.0
_TICK = timedelta(microseconds=1)

IDLE = "dream"  # run by idle detection, not by a clock
IDLE_CHECK = 30.0


@dataclass
class JobState:
    name: str
    trigger_text: str
    trigger: Any  # None: run when idle
    fn: JobFn
    lock: trio.Lock = field(default_factory=trio.Lock)
    last_run: datetime | None = None
    next_run: datetime | None = None
    last_result: dict[str, Any] | None = None


class Scheduler:
    def __init__(self, engine: JobEngine, clock: Callable[[], datetime] | None = None,
                 idle_seconds: Callable[[], float] | None = None) -> None:
        self.engine = engine
        tz = zone(engine.config.timezone)
        self.clock = clock or (lambda: datetime.now(tz))
        self.idle_seconds = idle_seconds or (lambda: 0.0)
        cfg = engine.config.jobs
        self.states: dict[str, JobState] = {}
        for job in JOBS:
            fn = importlib.import_module(f"memoryd.jobs.{job.module}").run
            if job.default is None:
                text, trigger = f"idle {engine.config.dream.idle_after:g}s", None
            else:
                text = getattr(cfg, job.config_key)
                trigger = parse_trigger(text, engine.config.timezone, start=self.clock())
            self.states[job.name] = JobState(job.name, text, trigger, fn)

    def describe(self) -> list[dict[str, Any]]:
        return [{"name": s.name, "trigger": s.trigger_text, "last_run": s.last_run,
                 "next_run": s.next_run, "last_result": s.last_result}
                for s in self.states.values()]

    async def run_now(self, name: str, dry_run: bool = False,
                      level: int | None = None) -> JobReport:
        state = self.states.get(name)
        if state is None:
            raise InvalidParams("job", f"unknown job {name!r}; jobs: {', '.join(self.states)}")
        options = {}
        if level is not None:
            if name != IDLE:
                raise InvalidParams("level", "only dream takes a level")
            if level not in (1, 2, 3):
                raise InvalidParams("level", "dream levels are 1, 2 and 3")
            options["level"] = level
        async with state.lock:
            return await self._run(state, dry_run, **options)

    async def _run(self, state: JobState, dry_run: bool, **options: Any) -> JobReport:
        now = self.clock()
        report = JobReport(job=state.name, dry_run=dry_run, started_at=now)
        started = time.perf_counter()
        try:
            report.changes = await state.fn(self.engine, now, dry_run, **options)
        except Exception as exc:
            report.error = f"{type(exc).__name__}: {exc}"
            log.exception("job.failed", job=state.name)
        report.duration_ms = round((time.perf_counter() - started) * 1000, 3)
        if not dry_run:
            state.last_run, state.last_result = now, report.summary()
        log.info("job.done", job=state.name, dry_run=dry_run, changed=len(report.changes),
                 changes=[{"id": c.id, "action": c.action, "path": c.path, "to": c.to}
                          for c in report.changes[:50]], duration_ms=report.duration_ms)
        return report

    async def run_forever(self) -> None:
        async with trio.open_nursery() as nursery:
            for state in self.states.values():
                if state.trigger is not None:
                    nursery.start_soon(self._loop, state)
                elif self.engine.config.dream.enabled:
                    nursery.start_soon(self._idle_loop, state)

    async def _idle_loop(self, state: JobState) -> None:
        """Dream deeper the longer nobody asks: level 1 after idle_after, 2 after three
        times that, 3 after six times; each level once per idle period."""
        after = self.engine.config.dream.idle_after
        done = 0
        while True:
            await trio.sleep(IDLE_CHECK)
            idle = self.idle_seconds()
            if idle < after:
                done = 0  # somebody is back: the next idle period starts over
                continue
            level = 3 if idle >= 6 * after else 2 if idle >= 3 * after else 1
            if level > done:
                async with state.lock:
                    await self._run(state, dry_run=False, level=level)
                done = level

    async def _loop(self, state: JobState) -> None:
        previous: datetime | None = None
        while True:
            now = self.clock()
            # Never hand the trigger the previous fire time: it would answer previous +
            # interval, possibly in the past, and replay every missed slot. From "now",
            # missed runs coalesce into one.
            after = now if previous is None else max(now, previous + _TICK)
            state.next_run = state.trigger.get_next_fire_time(None, after)
            if state.next_run is None:
                return
            while (delay := (state.next_run - self.clock()).total_seconds()) > 0:
                await trio.sleep(min(delay, MAX_SLEEP))
            previous = state.next_run
            async with state.lock:
                await self._run(state, dry_run=False)
