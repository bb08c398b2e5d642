"""Natural-language times in English and Chinese, resolved against `now` in a zone.

    "tomorrow at 9", "next Friday 3pm", "in 2 hours", "tonight", "2026-12-01 10:00",
    "明天下午三点", "下周一", "后天早上8点半", "3小时后", "星期五晚上7点"

A day without a time means 09:00 ("tonight" 20:00); a time without a day means
the next time it comes round. `find` locates an expression inside a sentence
(dream uses it to turn notes into reminders); `parse` reads a whole string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from memoryd.lang.daynames import WEEKDAYS
from memoryd.lang.numerals import EN_NUMBERS, zh_number
from memoryd.lang.timespans import weekday_index

DEFAULT_TIME = time(9, 0)


@dataclass
class Found:
    when: datetime
    span: tuple[int, int]  # where in the text
    text: str


_NUM = r"(?:\d{1,2}|[零〇一二两三四五六七八九十]{1,3})"
_EN_TIME = r"(?:at\s+)?(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ampm>am|pm|a\.m\.|p\.m\.)?"
_PATTERNS_EN = [
    ("iso", re.compile(r"\b(?P<d>\d{4}-\d{2}-\d{2})(?:[ T](?P<t>\d{1,2}:\d{2}))?\b")),
    ("in", re.compile(r"\bin\s+(?P<n>\d+|an?|one|two|three|ten)\s+"
                      r"(?P<unit>minute|min|hour|hr|day|week)s?\b", re.I)),
    ("day", re.compile(
        r"\b(?P<day>today|tonight|tomorrow|day after tomorrow|"
        rf"(?:this\s+|next\s+|on\s+)?(?:{'|'.join(WEEKDAYS)}))\b"
        r"(?:\s+(?P<part>morning|afternoon|evening|night))?"
        rf"(?:\s*,?\s*{_EN_TIME})?", re.I)),
    ("time", re.compile(r"\b(?:at\s+(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*"
                        r"(?P<ampm>am|pm)?|(?P<h2>\d{1,2})(?::(?P<m2>\d{2}))?\s*(?P<ampm2>am|pm)"
                        r"|(?P<noon>noon|midnight))\b", re.I)),
]
_PATTERNS_ZH = [
    ("in", re.compile(rf"(?P<n>{_NUM}|半)\s*(?P<unit>分钟|小时|个小时|天|周|星期)(?:以)?后")),
    ("day", re.compile(
        r"(?P<day>今天|今日|今晚|明天|明日|明早|明晚|后天|大后天|"
        r"(?:下(?:个)?|这|本)?(?:周|星期|礼拜)[一二三四五六日天])"
        rf"(?P<part>凌晨|早上|早晨|上午|中午|下午|傍晚|晚上|夜里)?"
        rf"(?:(?P<h>{_NUM})(?:点|時|时)(?P<half>半)?(?:(?P<m>{_NUM})分?)?)?")),
    ("time", re.compile(r"(?P<part>凌晨|早上|早晨|上午|中午|下午|傍晚|晚上)"
                        rf"(?P<h>{_NUM})(?:点|时)(?P<half>半)?(?:(?P<m>{_NUM})分?)?")),
]
_UNIT_EN = {"minute": "minutes", "min": "minutes", "hour": "hours", "hr": "hours",
            "day": "days", "week": "weeks"}
_UNIT_ZH = {"分钟": "minutes", "小时": "hours", "个小时": "hours", "天": "days", "周": "weeks",
            "星期": "weeks"}
_PM_PARTS = {"afternoon", "evening", "night", "下午", "傍晚", "晚上", "夜里", "今晚", "明晚"}
_PART_DEFAULT = {"morning": 9, "afternoon": 15, "evening": 19, "night": 20, "凌晨": 5,
                 "早上": 8, "早晨": 8, "上午": 9, "中午": 12, "下午": 15, "傍晚": 18,
                 "晚上": 20, "夜里": 22}


def _hour(h: int, part: str | None, ampm: str | None) -> int:
    ampm = (ampm or "").replace(".", "").lower()
    if (ampm == "pm" and h < 12) or (part in _PM_PARTS and h < 12):
        return h + 12
    if ampm == "am" and h == 12:
        return 0
    return h


def _next_weekday(today: date, weekday: int, force_next_week: bool) -> date:
    ahead = (weekday - today.weekday()) % 7
    if force_next_week:
        # "next Monday" / 下周一: the Monday of next week
        return today + timedelta(days=(7 - today.weekday()) + weekday)
    return today + timedelta(days=ahead or 7)


def _resolve_day(token: str, today: date) -> tuple[date, str | None]:
    t = token.lower().replace("on ", "").strip()
    simple = {"today": (0, None), "tonight": (0, "night"), "tomorrow": (1, None),
              "day after tomorrow": (2, None), "今天": (0, None), "今日": (0, None),
              "今晚": (0, "晚上"), "明天": (1, None), "明日": (1, None), "明早": (1, "早上"),
              "明晚": (1, "晚上"), "后天": (2, None), "大后天": (3, None)}
    if t in simple:
        days, part = simple[t]
        return today + timedelta(days=days), part
    for i, name in enumerate(WEEKDAYS):
        if t.endswith(name):
            return _next_weekday(today, i, t.startswith("next")), None
    return _next_weekday(today, weekday_index(t[-1]), t.startswith("下")), None


def _at(day: date, hour: int, minute: int, now: datetime) -> datetime:
    return datetime.combine(day, time(hour, minute), tzinfo=now.tzinfo)  # 99: ValueError


def _from_match(kind: str, m: re.Match[str], now: datetime) -> datetime | None:
    g = m.groupdict()
    today = now.date()
    if kind == "iso":
        d = date.fromisoformat(g["d"])
        t = time.fromisoformat(g["t"].zfill(5)) if g.get("t") else DEFAULT_TIME
        return datetime.combine(d, t, tzinfo=now.tzinfo)
    if kind == "in":
        raw = g["n"]
        n = 0.5 if raw == "半" else EN_NUMBERS.get(raw.lower()) or zh_number(raw)
        unit = _UNIT_EN.get(g["unit"].lower()) or _UNIT_ZH[g["unit"]]
        return now + timedelta(**{unit: n})
    part = g.get("part")
    if kind == "day":
        day, implied = _resolve_day(g["day"], today)
        part = part or implied
    else:
        day = today
    if g.get("noon"):
        hour, minute = (12 if g["noon"].lower() == "noon" else 0), 0
    elif g.get("h") or g.get("h2"):
        hour = _hour(zh_number(g.get("h") or g["h2"]), part, g.get("ampm") or g.get("ampm2"))
        minute = 30 if g.get("half") else zh_number(g.get("m") or g.get("m2") or "0")
    elif part:
        hour, minute = _PART_DEFAULT[part], 0
    elif kind == "time":
        return None
    else:
        hour, minute = DEFAULT_TIME.hour, DEFAULT_TIME.minute
    when = _at(day, hour, minute, now)
    if kind == "time" and when <= now:
        when += timedelta(days=1)  # "at 9" after nine: tomorrow
    return when


def find(text: str, now: datetime) -> Found | None:
    """The first time expression in `text` (the longest at that position)."""
    best: tuple[int, int, datetime, str] | None = None
    for kind, pattern in (*_PATTERNS_EN, *_PATTERNS_ZH):
        for m in pattern.finditer(text):
            if not m.group(0).strip():
                continue
            try:
                when = _from_match(kind, m, now)
            except (ValueError, KeyError, OverflowError):  # "at 99", "in 10^11 days"
                continue
            if when is None:
                continue
            key = (m.start(), -(m.end() - m.start()))
            if best is None or key < (best[0], -(best[1] - best[0])):
                best = (m.start(), m.end(), when, m.group(0))
            break
    if best is None:
        return None
    return Found(when=best[2], span=(best[0], best[1]), text=best[3].strip())


def parse(text: str, now: datetime) -> datetime | None:
    """A whole string that is a time expression ("tomorrow at 9", "下周一")."""
    found = find(text.strip(), now)
    if found is None:
        return None
    rest = (text[: found.span[0]] + text[found.span[1]:]).strip(" ,.，。")
    return found.when if not rest else None
