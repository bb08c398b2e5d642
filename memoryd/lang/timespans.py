"""Date windows counted from a reference day: a day, months, a season, a weekday, a
weekend, a part of a month or a year, a span back from the reference, a holiday.
What the time words of a question (timewords.py) name, as [start, end) in UTC."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from memoryd.lang.daynames import MONTHS, WEEKDAYS, WEEKDAYS_ZH

Span = tuple[datetime, datetime]

# Seasons as the northern hemisphere has them (months, inclusive).
SEASONS = {"spring": (3, 5), "summer": (6, 8), "fall": (9, 11), "autumn": (9, 11),
           "winter": (12, 2), "春天": (3, 5), "夏天": (6, 8), "秋天": (9, 11), "冬天": (12, 2)}
# Holidays on a fixed day (month, day, how many days).
HOLIDAYS = {"christmas eve": (12, 24, 1), "christmas": (12, 25, 1), "xmas": (12, 25, 1),
            "new year's eve": (12, 31, 1), "new years eve": (12, 31, 1),
            "new year's day": (1, 1, 1), "new years day": (1, 1, 1), "new year's": (1, 1, 1),
            "new year": (1, 1, 1), "halloween": (10, 31, 1), "valentine's day": (2, 14, 1),
            "valentines day": (2, 14, 1), "元旦": (1, 1, 1), "圣诞节": (12, 25, 1),
            "圣诞": (12, 25, 1), "平安夜": (12, 24, 1), "情人节": (2, 14, 1),
            "万圣节": (10, 31, 1), "国庆节": (10, 1, 7), "国庆": (10, 1, 7)}
# A part of a month (its days) and of a year (its months), in thirds.
_MONTH_PARTS = {"early": (1, 10), "mid": (11, 20), "late": (21, 31)}
_YEAR_PARTS = {"early": (1, 4), "mid": (5, 8), "late": (9, 12)}
_PART_WORDS = {"early": "early", "beginning": "early", "start": "early", "初": "early",
               "mid": "mid", "middle": "mid", "中": "mid", "late": "late", "end": "late",
               "底": "late", "末": "late"}


def month_number(name: str) -> int:
    name = name.casefold()[:3]
    return next(i for i, m in enumerate(MONTHS, 1) if m.startswith(name))


def day(d: date) -> Span:
    start = datetime(d.year, d.month, d.day, tzinfo=UTC)
    return start, start + timedelta(days=1)


def days(first: date, count: int) -> Span:
    return day(first)[0], day(first + timedelta(days=count))[0]


def months(year: int, first: int, last: int) -> Span:
    """From the first day of `first` to the end of `last` (`last` < `first`: into the
    next year, as winter)."""
    start = datetime(year, first, 1, tzinfo=UTC)
    end_year = year + (1 if last < first else 0)
    end = (datetime(end_year + (last == 12), (last % 12) + 1, 1, tzinfo=UTC))
    return start, end


def latest_month_year(ref: date, month: int) -> int:
    """The year of the latest `month` at or before `ref`."""
    return ref.year if month <= ref.month else ref.year - 1


def season(name: str, year: int) -> Span:
    """The season of that name that starts in `year` (winter: into the next year)."""
    return months(year, *SEASONS[name])


def latest_season(name: str, ref: date, ended: bool) -> Span:
    """The latest season of that name that has ended by `ref` ("last summer"), or that
    has begun by then ("this winter", "over the summer")."""
    for year in (ref.year, ref.year - 1, ref.year - 2):
        start, end = season(name, year)
        if (end.date() <= ref) if ended else (start.date() <= ref):
            return start, end
    return season(name, ref.year - 1)


def weekday(index: int, ref: date, *, weeks_back: int = 0, strictly: bool = False) -> Span:
    """That weekday (0 Monday) at or before `ref` (before it, `strictly`), `weeks_back`
    more weeks back."""
    back = (ref.weekday() - index) % 7
    if back == 0 and strictly:
        back = 7
    return day(ref - timedelta(days=back + 7 * weeks_back))


def weekday_of_week(index: int, ref: date, weeks_back: int) -> Span:
    """That weekday of the calendar week `weeks_back` before `ref`'s ("上周三": 1)."""
    monday = ref - timedelta(days=ref.weekday() + 7 * weeks_back)
    return day(monday + timedelta(days=index))


def weekend(ref: date, weeks_back: int) -> Span:
    """The weekend of `ref`'s week (0), or of the week `weeks_back` before it."""
    saturday = ref - timedelta(days=ref.weekday()) + timedelta(days=5 - 7 * weeks_back)
    return days(saturday, 2)


def week(ref: date, weeks_back: int) -> Span:
    monday = ref - timedelta(days=ref.weekday() + 7 * weeks_back)
    return days(monday, 7)


def month_back(ref: date, back: int) -> Span:
    """The calendar month `back` months before `ref`'s (0: its own)."""
    total = ref.year * 12 + ref.month - 1 - back
    return months(total // 12, total % 12 + 1, total % 12 + 1)


def part_of_month(word: str, year: int, month: int) -> Span:
    first, last = _MONTH_PARTS[_PART_WORDS[word]]
    start, end = months(year, month, month)
    return (start + timedelta(days=first - 1),
            min(end, start + timedelta(days=last)))


def week_of_month(nth: str, year: int, month: int) -> Span:
    """"The first week of May": days 1-7, 8-14, 15-21, 22-28; the last: its last 7."""
    start, end = months(year, month, month)
    if nth == "last":
        return end - timedelta(days=7), end
    first = start + timedelta(days=7 * ("first", "second", "third", "fourth").index(nth))
    return first, first + timedelta(days=7)


def part_of_year(word: str, year: int) -> Span:
    return months(year, *_YEAR_PARTS[_PART_WORDS[word]])


def holiday(name: str, ref: date, year: int | None = None) -> Span:
    """The holiday in `year`, else the latest one begun by `ref`."""
    month, first, length = HOLIDAYS[name]
    if year is None:
        year = ref.year if (month, first) <= (ref.month, ref.day) else ref.year - 1
    return days(date(year, month, first), length)


def back(n: int, unit: str, ref: date) -> Span | None:
    """The last `n` units up to and with `ref` ("the past two weeks")."""
    if n <= 0:
        return None
    length = {"day": 1, "week": 7, "fortnight": 14, "month": 30, "year": 365}[unit]
    return days(ref - timedelta(days=n * length - 1), n * length)


def ago(n: int, unit: str, ref: date) -> Span | None:
    """Around `n` units before `ref`: a window as wide as the unit, centred there (a
    weekend: that weekend)."""
    if n <= 0:
        return None
    if unit == "weekend":
        return weekend(ref, n)
    length = {"day": 1, "week": 7, "fortnight": 14, "month": 30, "year": 365}[unit]
    centre = ref - timedelta(days=n * length)
    half = timedelta(days=max(1, length // 2))
    start = datetime(centre.year, centre.month, centre.day, tzinfo=UTC) - half
    return start, start + 2 * half + timedelta(days=1)


def weekday_index(name: str) -> int:
    """0 for Monday: an English name or its short form ("tues", "Sat"), or a Chinese
    one (一 ... 日/天)."""
    if name in WEEKDAYS_ZH or name == "天":
        return WEEKDAYS_ZH.find(name) if name != "天" else 6
    return next(i for i, d in enumerate(WEEKDAYS) if d.startswith(name.casefold()[:3]))
