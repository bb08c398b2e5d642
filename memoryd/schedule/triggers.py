"""Job triggers from config text: an interval ("10m", "1h") or a crontab line."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from memoryd.durations import Duration


class TriggerError(ValueError):
    pass


def parse_trigger(text: str, timezone: str | None = None,
                  start: datetime | None = None) -> Any:
    """An APScheduler 3 trigger (IntervalTrigger or CronTrigger). An interval first
    fires one interval after `start` (the scheduler's own clock, so an injected clock
    is obeyed), not after the wall clock at creation."""
    from apscheduler.triggers.cron import CronTrigger
    from apscheduler.triggers.interval import IntervalTrigger

    try:
        seconds = Duration.parse(text)
    except ValueError:
        seconds = None
    try:
        if seconds is not None:
            if seconds <= 0:
                raise TriggerError(f"interval {text!r} must be longer than 0")
            return IntervalTrigger(seconds=seconds, timezone=timezone or "UTC",
                                   start_date=start + timedelta(seconds=seconds)
                                   if start else None)
        return CronTrigger.from_crontab(text, timezone=timezone)
    except TriggerError:
        raise
    except Exception as exc:  # apscheduler raises ValueError, pytz/zoneinfo errors...
        raise TriggerError(f"expected an interval like 10m or a crontab line like "
                           f"'17 3 * * *', got {text!r} ({exc})") from None
