"""Reminders end to end: memory_remind, the notify job, pending.md, subscribers."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from memoryd_client import RpcFailure
from tests.e2e.test_memoryctl import ctl, ok
from tests.layout import file_of


def test_remind_in_words_and_errors(make_daemon):
    d = make_daemon(config="timezone: Asia/Shanghai\n").start()
    r = d.call("memory_remind", {"content": "Call the landlord", "when": "明天下午三点"})
    due = datetime.fromisoformat(r["due_at"]).astimezone(ZoneInfo("Asia/Shanghai"))
    tomorrow = datetime.now(ZoneInfo("Asia/Shanghai")).date() + timedelta(days=1)
    assert (due.date(), due.hour, due.minute) == (tomorrow, 15, 0)
    assert (r["kind"], r["category"], r["phase"]) == ("reminder", "reminders", "organized")
    assert file_of(d.root, r, "reminders") is not None
    for bad in ({"content": "x", "when": "someday maybe"}, {"content": "x"},
                {"content": "x", "when": "tomorrow", "due_at": "2030-01-01T09:00:00Z"}):
        with pytest.raises(RpcFailure) as info:
            d.call("memory_remind", bad)
        assert info.value.code == -32602 and "params.when" in info.value.message
    shown = ok(d, "remind", "Water the plants", "--when", "in 2 hours")
    assert shown["kind"] == "reminder"


def test_due_reminders_are_announced_once(daemon):
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    future = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    with daemon.client() as listener:
        listener.call("events/subscribe")
        due = daemon.call("memory_remind", {"content": "Stand-up in 5 minutes",
                                            "due_at": past})
        later = daemon.call("memory_remind", {"content": "Renew passport", "due_at": future})
        out = ctl(daemon, "notify").stdout
        assert out.startswith("notify: changed 1")
        messages = []
        while True:
            message = listener.read_message()
            messages.append(message)
            if message.get("method") == "notifications/reminder":
                break
        reminder = messages[-1]["params"]
        assert reminder["id"] == due["id"] and reminder["content"] == "Stand-up in 5 minutes"
    pending = (daemon.root / "pending.md").read_text()
    assert "Stand-up in 5 minutes" in pending and "Renew passport" not in pending
    assert daemon.call("memory_read", {"id": due["id"]})["notified_at"]
    again = daemon.call("jobs/run", {"job": "notify"})
    assert again["changes"] == [], "announced once"
    assert daemon.call("memory_read", {"id": later["id"]})["notified_at"] is None
    dry = daemon.call("jobs/run", {"job": "notify", "dry_run": True})
    assert json.dumps(dry)
