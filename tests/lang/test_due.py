"""Times in words, English and Chinese, resolve to the right instant in the zone."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from memoryd.lang.due import find, parse
from memoryd.lang.numerals import zh_number

SH = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 11, 18, 10, 30, tzinfo=SH)  # a Wednesday, 10:30 in Shanghai


@pytest.mark.parametrize("text, expected", [
    ("tomorrow at 9", (2026, 11, 19, 9, 0)),
    ("tomorrow 9am", (2026, 11, 19, 9, 0)),
    ("Tomorrow at 9:45 pm", (2026, 11, 19, 21, 45)),
    ("today at 17:30", (2026, 11, 18, 17, 30)),
    ("tonight", (2026, 11, 18, 20, 0)),
    ("at 5pm", (2026, 11, 18, 17, 0)),
    ("at 9", (2026, 11, 19, 9, 0)),  # already past today: tomorrow
    ("noon", (2026, 11, 18, 12, 0)),
    ("in 2 hours", (2026, 11, 18, 12, 30)),
    ("in 30 minutes", (2026, 11, 18, 11, 0)),
    ("in 3 days", (2026, 11, 21, 10, 30)),
    ("next Friday", (2026, 11, 27, 9, 0)),
    ("Friday", (2026, 11, 20, 9, 0)),
    ("next friday 3pm", (2026, 11, 27, 15, 0)),
    ("Monday morning", (2026, 11, 23, 9, 0)),
    ("2026-12-01 10:00", (2026, 12, 1, 10, 0)),
    ("2026-12-24", (2026, 12, 24, 9, 0)),
    ("明天下午三点", (2026, 11, 19, 15, 0)),
    ("明天上午十点", (2026, 11, 19, 10, 0)),
    ("后天早上8点半", (2026, 11, 20, 8, 30)),
    ("下周一", (2026, 11, 23, 9, 0)),
    ("下星期三下午4点30分", (2026, 11, 25, 16, 30)),
    ("星期五晚上7点", (2026, 11, 20, 19, 0)),
    ("今晚", (2026, 11, 18, 20, 0)),
    ("下午两点", (2026, 11, 18, 14, 0)),
    ("3小时后", (2026, 11, 18, 13, 30)),
    ("半小时后", (2026, 11, 18, 11, 0)),
    ("十分钟后", (2026, 11, 18, 10, 40)),
])
def test_expressions(text, expected):
    assert parse(text, NOW) == datetime(*expected, tzinfo=SH)


@pytest.mark.parametrize("text", ["buy milk", "", "in a while", "someday", "明年春天",
                                  "tomorrow at 99", "at 25", "today at 9:75",
                                  "in 99999999999 days", "in 999999999 weeks"])
def test_not_a_time(text):
    assert parse(text, NOW) is None


def test_found_inside_sentences():
    hit = find("Remind me to call Anne tomorrow at 9 about the lease", NOW)
    assert hit and hit.text == "tomorrow at 9" and hit.when == datetime(2026, 11, 19, 9,
                                                                         tzinfo=SH)
    hit = find("记得明天下午三点给妈妈打电话", NOW)
    assert hit and hit.text == "明天下午三点" and hit.when.hour == 15
    assert find("nothing to see here", NOW) is None


def test_chinese_numerals():
    assert [zh_number(x) for x in ["三", "十", "十二", "二十三", "两", "12"]] == [
        3, 10, 12, 23, 2, 12]
