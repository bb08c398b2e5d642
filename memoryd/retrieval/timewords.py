"""Time in a question: the date window an expression names ("in May 2023", "on October
13, 2023", "on May 2nd", "last weekend", "two weeks ago", "去年夏天", "2023年5月"), read
against a reference time (now, `as_of`, or `reference_time` for a replayed
conversation); and whether a question asks for a time ("When did...?") and a memory
says one ("...last week"), for the answer to "when".

Ranking boosts memories of that window (it never filters them: a question about
"last summer" may be answered by what was said in September), and the expression's
words of a relative one stop counting as keywords ("last weekend"; a date stays, as
the indexed text of every memory carries its day). The
most specific expression wins: a day over a month over a year over a relative span.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from memoryd.daynames import MONTHS, WEEKDAYS

_MONTH = "|".join([*MONTHS, *(m[:3] for m in MONTHS if m != "may"), "sept"])
_NUM_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
              "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "a couple of": 2,
              "a few": 3}
_ZH_NUM = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
           "九": 9, "十": 10}
# Seasons as the northern hemisphere has them (months, inclusive).
_SEASONS = {"spring": (3, 5), "summer": (6, 8), "fall": (9, 11), "autumn": (9, 11),
            "winter": (12, 2), "春天": (3, 5), "夏天": (6, 8), "秋天": (9, 11), "冬天": (12, 2)}


@dataclass(frozen=True)
class Window:
    start: datetime  # inclusive
    end: datetime  # exclusive
    span: tuple[int, int]  # where the expression is in the question
    text: str
    relative: bool  # read against the reference ("last weekend"), not a date itself


def _month(name: str) -> int:
    name = name.casefold()[:3]
    return next(i for i, m in enumerate(MONTHS, 1) if m.startswith(name))


def _day(d: date) -> tuple[datetime, datetime]:
    start = datetime(d.year, d.month, d.day, tzinfo=UTC)
    return start, start + timedelta(days=1)


def _months(year: int, first: int, last: int) -> tuple[datetime, datetime]:
    """From the first day of `first` to the end of `last` (`last` < `first`: into the
    next year, as winter)."""
    start = datetime(year, first, 1, tzinfo=UTC)
    end_year = year + (1 if last < first else 0)
    end = (datetime(end_year + (last == 12), (last % 12) + 1, 1, tzinfo=UTC))
    return start, end


def _before(ref: date, month: int) -> int:
    """The year of the latest `month` at or before `ref`."""
    return ref.year if month <= ref.month else ref.year - 1


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUM_WORDS.get(word.casefold(), 0) or \
        _ZH_NUM.get(word, 0)


_RULES: list[tuple[int, re.Pattern[str]]] = [  # (specificity, pattern)
    (3, re.compile(r"\b(?P<y>(?:19|20)\d\d)-(?P<m>\d\d)-(?P<d>\d\d)\b")),
    (3, re.compile(rf"\b(?:on\s+)?(?P<mn>{_MONTH})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?"
                   rf"\s+(?P<y>(?:19|20)\d\d)\b", re.I)),
    (3, re.compile(rf"\b(?:on\s+)?(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mn>{_MONTH})"
                   rf"\.?,?\s+(?P<y>(?:19|20)\d\d)\b", re.I)),
    (3, re.compile(r"(?P<y>(?:19|20)\d\d)年(?P<m>\d{1,2})月(?P<d>\d{1,2})[日号]")),
    # A day without its year ("on May 2nd", "the 3rd of May", "5月2日"): the latest one
    # at or before the reference.
    (3, re.compile(rf"\b(?:on\s+)?(?P<mn>{_MONTH})\.?\s+(?P<d>\d{{1,2}})(?P<o>st|nd|rd|th)?\b"
                   rf"(?!:\d|\s*[,.]?\s*(?:19|20)\d\d)", re.I)),
    (3, re.compile(rf"\b(?:on\s+)?(?:the\s+)?(?P<d>\d{{1,2}})(?P<o>st|nd|rd|th)?\s+(?:of\s+)?"
                   rf"(?P<mn>{_MONTH})\b(?!\.?,?\s*(?:19|20)\d\d)", re.I)),
    (3, re.compile(r"(?<![年\d])(?P<m>\d{1,2})月(?P<d>\d{1,2})[日号]")),
    (2, re.compile(rf"\b(?:in\s+)?(?P<mn>{_MONTH})\.?,?\s+(?:of\s+)?(?P<y>(?:19|20)\d\d)\b",
                   re.I)),
    (2, re.compile(r"(?P<y>(?:19|20)\d\d)年(?P<m>\d{1,2})月")),
    (1, re.compile(r"\b(?:in\s+|during\s+)?(?P<y>(?:19|20)\d\d)\b(?!年)")),
    (1, re.compile(r"(?P<y>(?:19|20)\d\d)年")),
    (0, re.compile(r"\b(?P<rel>yesterday|today|tonight|this morning|this week|last week|"
                   r"this weekend|last weekend|this month|last month|this year|last year|"
                   r"(?:last|this)\s+(?P<season>spring|summer|fall|autumn|winter))\b", re.I)),
    (0, re.compile(r"\b(?P<n>\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|"
                   r"a couple of|a few)\s+(?P<unit>day|week|month|year)s?\s+ago\b", re.I)),
    (0, re.compile(rf"\bin\s+(?P<mn>{_MONTH})\b(?!\s*\d)", re.I)),
    (0, re.compile(r"(?P<zrel>昨天|前天|今天|上周|上个?星期|这周|本周|上个月|这个月|本月|"
                   r"去年|今年|前年)(?P<zseason>春天|夏天|秋天|冬天)?")),
    (0, re.compile(r"(?P<zn>\d+|[一两二三四五六七八九十])\s*(?P<zunit>天|周|个星期|个月|年)前")),
]


def find(question: str, reference: datetime) -> Window | None:
    """The window the most specific time expression in `question` names, read against
    `reference`; None when it names none."""
    ref = reference.astimezone(UTC).date()
    best: tuple[int, Window] | None = None
    for specificity, rule in _RULES:
        for m in rule.finditer(question):
            try:
                bounds = _bounds(m, ref)
            except (ValueError, OverflowError, StopIteration):  # "February 30", 9999+
                continue
            if bounds is None:
                continue
            window = Window(*bounds, span=m.span(), text=m.group(),
                            relative=specificity == 0)
            if best is None or specificity > best[0]:
                best = (specificity, window)
    return best[1] if best else None


def find_at(question: str, reference: float) -> Window | None:
    """`find`, the reference as epoch seconds (one past what a date can hold: none)."""
    try:
        return find(question, datetime.fromtimestamp(reference, UTC))
    except (ValueError, OverflowError, OSError):
        return None


def _bounds(m: re.Match[str], ref: date) -> tuple[datetime, datetime] | None:
    g = {k: v for k, v in m.groupdict().items() if v}
    month = int(g["m"]) if "m" in g else _month(g["mn"]) if "mn" in g else 0
    if "d" in g:
        day = int(g["d"])
        if "y" in g:
            return _day(date(int(g["y"]), month, day))
        if g.get("mn") == "may" and "o" not in g:
            return None  # "you may 2x it", "room 5 may": the verb, not the month
        year = ref.year if (month, day) <= (ref.month, ref.day) else ref.year - 1
        return _day(date(year, month, day))
    if "y" in g and ("m" in g or "mn" in g):
        return _months(int(g["y"]), month, month)
    if "y" in g:
        return _months(int(g["y"]), 1, 12)
    if "mn" in g:
        return _months(_before(ref, month), month, month)
    if "rel" in g:
        return _relative(g["rel"].casefold(), g.get("season"), ref)
    if "n" in g:
        return _ago(_count(g["n"]), g["unit"].casefold(), ref)
    if "zrel" in g:
        return _zh_relative(g["zrel"], g.get("zseason"), ref)
    if "zn" in g:
        unit = {"天": "day", "周": "week", "个星期": "week", "个月": "month", "年": "year"}
        return _ago(_count(g["zn"]), unit[g["zunit"]], ref)
    return None


def _season(name: str, year: int) -> tuple[datetime, datetime]:
    """The season of that name that starts in `year` (winter: into the next year)."""
    return _months(year, *_SEASONS[name])


def _latest_season(name: str, ref: date, ended: bool) -> tuple[datetime, datetime]:
    """The latest season of that name that has ended by `ref` ("last summer"), or that
    has begun by then ("this winter")."""
    for year in (ref.year, ref.year - 1, ref.year - 2):
        start, end = _season(name, year)
        if (end.date() <= ref) if ended else (start.date() <= ref):
            return start, end
    return _season(name, ref.year - 1)


def _relative(rel: str, season: str | None, ref: date) -> tuple[datetime, datetime]:
    if season:
        return _latest_season(season.casefold(), ref, ended=rel.startswith("last"))
    monday = ref - timedelta(days=ref.weekday())
    spans = {
        "yesterday": _day(ref - timedelta(days=1)), "today": _day(ref),
        "tonight": _day(ref), "this morning": _day(ref),
        "this week": (_day(monday)[0], _day(monday + timedelta(days=7))[0]),
        "last week": (_day(monday - timedelta(days=7))[0], _day(monday)[0]),
        "this weekend": (_day(monday + timedelta(days=5))[0], _day(monday + timedelta(days=7))[0]),
        "last weekend": (_day(monday - timedelta(days=2))[0], _day(monday)[0]),
        "this month": _months(ref.year, ref.month, ref.month),
        "last month": _months(ref.year - (ref.month == 1), (ref.month - 2) % 12 + 1,
                              (ref.month - 2) % 12 + 1),
        "this year": _months(ref.year, 1, 12), "last year": _months(ref.year - 1, 1, 12),
    }
    return spans[rel]


def _zh_relative(rel: str, season: str | None, ref: date) -> tuple[datetime, datetime]:
    year = {"去年": ref.year - 1, "今年": ref.year, "前年": ref.year - 2}.get(rel)
    if season and year is not None:
        return _season(season, year)
    english = {"昨天": "yesterday", "今天": "today", "上周": "last week", "上星期": "last week",
               "上个星期": "last week", "这周": "this week", "本周": "this week",
               "上个月": "last month", "上月": "last month", "这个月": "this month",
               "本月": "this month", "去年": "last year", "今年": "this year"}
    if rel == "前天":
        return _day(ref - timedelta(days=2))
    if rel == "前年":
        return _months(ref.year - 2, 1, 12)
    return _relative(english[rel], None, ref)


def _ago(n: int, unit: str, ref: date) -> tuple[datetime, datetime] | None:
    """Around `n` units before `ref`: a window as wide as the unit, centred there."""
    if n <= 0:
        return None
    days = {"day": 1, "week": 7, "month": 30, "year": 365}[unit]
    centre = ref - timedelta(days=n * days)
    half = timedelta(days=max(1, days // 2))
    start = datetime(centre.year, centre.month, centre.day, tzinfo=UTC) - half
    return start, start + 2 * half + timedelta(days=1)


def without(question: str, window: Window | None) -> str:
    """The question without a relative time expression, for keyword matching: "last",
    "weekend", "ago" name no memory's words. A date stays: each memory's indexed text
    carries its day ("8 May 2023"), which "in May 2023" matches as words too."""
    if window is None or not window.relative:
        return question
    return (question[:window.span[0]] + " " + question[window.span[1]:]).strip()


# A question that asks for a time ("When did Ann move?", "On what date...", "什么时候"):
# its answer is likelier a memory that says one ("...moved last week", "...on 3 May").
_ASKS_WHEN = re.compile(
    r"^\W*when\b|\b(?:what|which) (?:date|day|time|year|month|week)\b(?! zone)|"
    r"\bhow long ago\b|\bsince when\b|什么时候|哪天|哪一天|几号|几月|哪年|何时", re.I)
_STATES_TIME = re.compile(
    rf"\b(?:yesterday|today|tonight|tomorrow|ago|(?:last|next|this) (?:week|weekend|month|"
    rf"year|night|morning|evening|summer|winter|spring|fall|autumn)|"
    rf"{'|'.join(WEEKDAYS)}|{'|'.join(m for m in MONTHS if m != 'may')}|(?:19|20)\d\d)"
    rf"\b|昨天|前天|今天|明天|上周|上个月|去年|前年|\d+月|\d+[日号]", re.I)


def asks_when(question: str) -> bool:
    """Whether a question asks for a time (when, what date, 什么时候)."""
    return bool(_ASKS_WHEN.search(question))


def states_time(text: str) -> bool:
    """Whether a text says when something was ("yesterday", "last weekend", a weekday,
    a month, a year, "上周"); "may" is left out, as mostly the verb."""
    return bool(_STATES_TIME.search(text))
