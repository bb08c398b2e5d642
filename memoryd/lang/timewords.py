"""Time in a question: the date window an expression names, read against a reference
time (now, `as_of`, or `reference_time` for a replayed conversation); and whether a
question asks for a time ("When did...?") and a memory says one ("...last week"), for
the answer to "when".

What is read, English and Chinese: a date with or without its year ("on October 13,
2023", "on May 2nd", "5月2号"), a month, a year, a season of a year ("the summer of
2022"), a part of a month or a year ("early June", "the end of May", "the first week
of May", "late last year", "上个月底", "去年年底"), a weekday ("last Friday", "on
Monday", "the Saturday before last", "since Tuesday", "上周三", "星期二"), a weekend
("last weekend", "the weekend before last", "this past weekend", "上个周末"), a holiday on a
fixed day ("last Christmas", "on Halloween", "元旦", "国庆"), a span back ("the past
two weeks", "the last few days", "最近三天", "前几天"), so long ago ("two weeks ago",
"three months back", "a fortnight ago", "三天前"), and the calendar's words
("yesterday", "last month", "this year", "去年夏天"). The windows are in timespans.py.

Ranking boosts memories of that window (it never filters them: a question about
"last summer" may be answered by what was said in September), and the expression's
words of a relative one stop counting as keywords ("last weekend"; a date stays, as
the indexed text of every memory carries its day; so do a weekday and a holiday, words
a memory says). The most specific expression wins: a day over a month over a year over
a relative span; among relative ones, the first rule that reads one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from memoryd.lang import timespans as spans
from memoryd.lang.daynames import MONTHS, WEEKDAYS
from memoryd.lang.numerals import count as _count

_MONTH = "|".join([*MONTHS, *(m[:3] for m in MONTHS if m != "may"), "sept"])
_WEEKDAY = "|".join([*WEEKDAYS, *(d[:3] for d in WEEKDAYS), "tues", "thurs"])
_YEAR = r"(?P<y>(?:19|20)\d\d)"
_NUMBER = r"\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few"
_ZH_NUMBER = r"\d{1,2}|十[一二]?|[一两二三四五六七八九几]"
_PART = r"(?P<part>early|mid|late|(?:the\s+)?(?:beginning|start|middle|end)\s+of)[\s-]*"
_NTH_WEEK = r"(?:the\s+)?(?P<nth>first|second|third|fourth|last)\s+week\s+of\s+"
_HOLIDAY = "|".join(sorted((h for h in spans.HOLIDAYS if h.isascii()), key=len, reverse=True))
_ZH_HOLIDAY = "|".join(sorted((h for h in spans.HOLIDAYS if not h.isascii()), key=len,
                              reverse=True))


@dataclass(frozen=True)
class Window:
    start: datetime  # inclusive
    end: datetime  # exclusive
    span: tuple[int, int]  # where the expression is in the question
    text: str
    relative: bool  # read against the reference ("last weekend"), not a date itself


_RULES: list[tuple[int, re.Pattern[str]]] = [  # (specificity, pattern)
    (3, re.compile(rf"\b{_YEAR}-(?P<m>\d\d)-(?P<d>\d\d)\b")),
    (3, re.compile(rf"\b(?:on\s+)?(?P<mn>{_MONTH})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?"
                   rf"\s+{_YEAR}\b", re.I)),
    (3, re.compile(rf"\b(?:on\s+)?(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mn>{_MONTH})"
                   rf"\.?,?\s+{_YEAR}\b", re.I)),
    (3, re.compile(r"(?P<y>(?:19|20)\d\d)年(?P<m>\d{1,2})月(?P<d>\d{1,2})[日号]")),
    (3, re.compile(rf"\b(?P<hol>{_HOLIDAY})\s+(?:of\s+)?{_YEAR}\b", re.I)),
    # A day without its year ("on May 2nd", "the 3rd of May", "5月2日"): the latest one
    # at or before the reference.
    (3, re.compile(rf"\b(?:on\s+)?(?P<mn>{_MONTH})\.?\s+(?P<d>\d{{1,2}})(?P<o>st|nd|rd|th)?\b"
                   rf"(?!:\d|\s*[,.]?\s*(?:19|20)\d\d)", re.I)),
    (3, re.compile(rf"\b(?:on\s+)?(?:the\s+)?(?P<d>\d{{1,2}})(?P<o>st|nd|rd|th)?\s+(?:of\s+)?"
                   rf"(?P<mn>{_MONTH})\b(?!\.?,?\s*(?:19|20)\d\d)", re.I)),
    (3, re.compile(r"(?<![年\d])(?P<m>\d{1,2})月(?P<d>\d{1,2})[日号]")),
    # A part of a month or a season of a year ("early June 2023", "the summer of 2022")
    # before the month or the year alone.
    (2, re.compile(rf"\b{_PART}(?P<mn>{_MONTH})\.?,?\s+(?:of\s+)?{_YEAR}\b", re.I)),
    (2, re.compile(rf"\b{_NTH_WEEK}(?P<mn>{_MONTH})\.?,?\s+{_YEAR}\b", re.I)),
    (2, re.compile(rf"\b(?:the\s+)?(?P<season>spring|summer|fall|autumn|winter)\s+(?:of\s+)?"
                   rf"{_YEAR}\b", re.I)),
    (2, re.compile(rf"\b(?:in\s+)?(?P<mn>{_MONTH})\.?,?\s+(?:of\s+)?{_YEAR}\b", re.I)),
    (2, re.compile(r"(?P<y>(?:19|20)\d\d)年(?P<m>\d{1,2})月")),
    (1, re.compile(rf"\b(?:in\s+|during\s+)?{_YEAR}\b(?!年)")),
    (1, re.compile(r"(?P<y>(?:19|20)\d\d)年")),
    # Relative: read against the reference. The first rule to match wins among these,
    # so the longer readings come first ("the last two weeks" before "last week").
    (0, re.compile(rf"\b{_NTH_WEEK}(?P<mn>{_MONTH})\b(?!\s*\d)", re.I)),
    (0, re.compile(rf"\b(?:the|in the|over the|during the|within the|for the|this)\s+"
                   rf"(?:past|last|previous)\s+(?:(?P<bn>{_NUMBER}|few|couple of|several)\s+)?"
                   rf"(?P<bunit>day|week|fortnight|month|year)s?\b(?!end)", re.I)),
    (0, re.compile(rf"\b{_PART}(?P<prel>this|last)\s+(?P<punit>month|year)\b", re.I)),
    (0, re.compile(rf"\b{_PART}(?:the\s+)?(?P<punit>month|year)\b", re.I)),
    (0, re.compile(rf"\b{_PART}(?P<mn>{_MONTH})\b(?!\s*\d)", re.I)),
    (0, re.compile(rf"\b(?P<since>since\s+)?(?P<wrel>last|this past|past|this|on|the)?\s*"
                   rf"(?P<wd>{_WEEKDAY})\b"
                   rf"(?P<wbefore>\s+before\s+last)?", re.I)),
    (0, re.compile(r"\b(?P<wk>(?:the\s+)?weekend\s+before\s+last|(?:this\s+)?past\s+weekend)\b",
                   re.I)),
    (0, re.compile(rf"\b(?:(?:last|this past|on|at)\s+)?(?P<hol>{_HOLIDAY})\b", re.I)),
    (0, re.compile(r"\b(?P<rel>(?:the\s+)?day\s+before\s+yesterday|yesterday|today|tonight|"
                   r"this morning|last night|this week|last week|previous week|this weekend|"
                   r"last weekend|this month|last month|previous month|this year|last year|"
                   r"previous year|"
                   r"(?:last|this)\s+(?P<season>spring|summer|fall|autumn|winter))\b", re.I)),
    (0, re.compile(r"\b(?:over|during|in)\s+the\s+(?P<lseason>spring|summer|fall|autumn|"
                   r"winter)\b", re.I)),
    (0, re.compile(rf"\b(?P<n>{_NUMBER})\s+(?P<unit>day|week|weekend|fortnight|month|year)s?\s+"
                   rf"(?:ago|back)\b", re.I)),
    (0, re.compile(rf"\bin\s+(?P<mn>{_MONTH})\b(?!\s*\d)", re.I)),
    (0, re.compile(r"(?P<zprel>上个?|这个?|本|去|今)?(?P<zpunit>月|年)年?(?P<zpart>初|中|底|末)")),
    (0, re.compile(r"(?P<zrel>昨天|大前天|前天|今天|上上周|上周|上个?星期|这周|本周|上个月|这个月|"
                   r"本月|去年|今年|前年)(?P<zseason>春天|夏天|秋天|冬天)?(?![一二三四五六日天末])")),
    (0, re.compile(r"(?P<zwrel>上上|上个?|这个?|本)?(?:周|星期|礼拜)(?P<zwd>[一二三四五六日天])")),
    (0, re.compile(r"(?P<zwe>上上|上个?|这个?|本)?(?P<zwk>周末)")),
    (0, re.compile(rf"(?P<zn>{_ZH_NUMBER})\s*(?P<zunit>天|周|个星期|个月|年)前")),
    (0, re.compile(rf"(?:最近|过去|这)(?P<zbn>{_ZH_NUMBER})(?P<zbunit>天|周|个星期|个月|年)")),
    (0, re.compile(r"(?P<zfew>前几天|这几天|这两天|前两天|最近几天)")),
    (0, re.compile(rf"(?<![年\d个])(?P<zm>{_ZH_NUMBER})月份?(?![\d一二三四五六七八九十]*[日号])")),
    (0, re.compile(rf"(?P<zhol>{_ZH_HOLIDAY})")),
]


# A weekday, a month or a holiday is a word a memory says ("on Saturday we hiked", "at
# Christmas"; every memory's indexed text carries its month): its words keep counting
# as keywords, unlike "last" or "ago".
_NAMED = frozenset(("wd", "hol", "mn", "zwd", "zhol"))


# A word or character every rule above needs one of: a question with none (most
# questions) is read no further.
_ANY = re.compile(r"\d|[天月年周期拜旦诞夜节庆]|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|"
                  r"nov|dec|mon|tue|wed|thu|fri|sat|sun|yesterday|today|tonight|morning|night|"
                  r"day|week|month|year|ago|back|spring|summer|fall|autumn|winter|christmas|"
                  r"xmas|new year|halloween|valentine|fortnight)", re.I)


def find(question: str, reference: datetime) -> Window | None:
    """The window the most specific time expression in `question` names, read against
    `reference`; None when it names none."""
    if not _ANY.search(question):
        return None
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
            named = {k for k, v in m.groupdict().items() if v} & _NAMED
            window = Window(*bounds, span=m.span(), text=m.group(),
                            relative=specificity == 0 and not named)
            if best is None or specificity > best[0]:
                best = (specificity, window)
    return best[1] if best else None


def find_at(question: str, reference: float) -> Window | None:
    """`find`, the reference as epoch seconds (one past what a date can hold: none)."""
    try:
        return find(question, datetime.fromtimestamp(reference, UTC))
    except (ValueError, OverflowError, OSError):
        return None


def _bounds(m: re.Match[str], ref: date) -> spans.Span | None:
    g = {k: v for k, v in m.groupdict().items() if v}
    if "wk" in g:  # "the weekend before last", "this past weekend"
        return spans.weekend(ref, 2 if "before" in g["wk"].casefold() else 1)
    month = int(g["m"]) if "m" in g else spans.month_number(g["mn"]) if "mn" in g else 0
    part = g["part"].split()[-2 if g["part"].split()[-1] == "of" else -1].casefold() \
        if "part" in g else None
    if "d" in g:
        day = int(g["d"])
        if "y" in g:
            return spans.day(date(int(g["y"]), month, day))
        if g.get("mn") == "may" and "o" not in g:
            return None  # "you may 2x it", "room 5 may": the verb, not the month
        year = ref.year if (month, day) <= (ref.month, ref.day) else ref.year - 1
        return spans.day(date(year, month, day))
    if "hol" in g:
        return spans.holiday(" ".join(g["hol"].casefold().replace("’", "'").split()), ref,
                             int(g["y"]) if "y" in g else None)
    if "season" in g and "y" in g:
        return spans.season(g["season"].casefold(), int(g["y"]))
    if (part or "nth" in g) and month:
        if g.get("mn") == "may":
            return None  # "leaving early may help": the verb, lower case
        year = int(g["y"]) if "y" in g else spans.latest_month_year(ref, month)
        if "nth" in g:
            return spans.week_of_month(g["nth"].casefold(), year, month)
        return spans.part_of_month(part or "early", year, month)
    if "y" in g and month:
        return spans.months(int(g["y"]), month, month)
    if "y" in g:
        return spans.months(int(g["y"]), 1, 12)
    if part:
        back = 1 if g.get("prel", "").casefold() == "last" else 0
        if g["punit"].casefold() == "year":
            return spans.part_of_year(part, ref.year - back)
        start, _ = spans.month_back(ref, back)
        return spans.part_of_month(part, start.year, start.month)
    if "mn" in g:
        return spans.months(spans.latest_month_year(ref, month), month, month)
    if "wd" in g:
        return _weekday(g, ref)
    if "bunit" in g:
        return spans.back(_count(g.get("bn", "1")), g["bunit"].casefold(), ref)
    if "rel" in g:
        return _relative(g["rel"].casefold(), g.get("season"), ref)
    if "lseason" in g:
        return spans.latest_season(g["lseason"].casefold(), ref, ended=False)
    if "n" in g:
        return spans.ago(_count(g["n"]), g["unit"].casefold(), ref)
    return _chinese(g, ref)


def _weekday(g: dict[str, str], ref: date) -> spans.Span | None:
    rel = " ".join(g.get("wrel", "").casefold().split())
    name = g["wd"].casefold()
    if name not in WEEKDAYS and rel not in ("on", "last", "this past"):
        return None  # "Sat", "Sun" alone may be other words ("sun"); "on Sun" is a day
    index = spans.weekday_index(name)
    before_last = "wbefore" in g
    start, end = spans.weekday(index, ref, weeks_back=1 if before_last else 0,
                               strictly=before_last or rel in ("last", "this past", "past"))
    return (start, spans.day(ref)[1]) if "since" in g else (start, end)


def _relative(rel: str, season: str | None, ref: date) -> spans.Span:
    if season:
        return spans.latest_season(season.casefold(), ref, ended=rel.startswith("last"))
    rel = " ".join(rel.replace("previous", "last").split()).removeprefix("the ")
    table = {
        "yesterday": lambda: spans.day(ref - timedelta(days=1)),
        "last night": lambda: spans.day(ref - timedelta(days=1)),
        "day before yesterday": lambda: spans.day(ref - timedelta(days=2)),
        "today": lambda: spans.day(ref), "tonight": lambda: spans.day(ref),
        "this morning": lambda: spans.day(ref),
        "this week": lambda: spans.week(ref, 0), "last week": lambda: spans.week(ref, 1),
        "this weekend": lambda: spans.weekend(ref, 0),
        "last weekend": lambda: spans.weekend(ref, 1),
        "this month": lambda: spans.month_back(ref, 0),
        "last month": lambda: spans.month_back(ref, 1),
        "this year": lambda: spans.months(ref.year, 1, 12),
        "last year": lambda: spans.months(ref.year - 1, 1, 12),
    }
    return table[rel]()


_ZH_BACK = {"上上": 2, "上个": 1, "上": 1, "这个": 0, "这": 0, "本": 0}
_ZH_UNIT = {"天": "day", "周": "week", "个星期": "week", "个月": "month", "年": "year"}


def _chinese(g: dict[str, str], ref: date) -> spans.Span | None:
    if "zrel" in g:
        return _zh_relative(g["zrel"], g.get("zseason"), ref)
    if "zwd" in g:
        index = spans.weekday_index(g["zwd"])
        if "zwrel" in g:
            return spans.weekday_of_week(index, ref, _ZH_BACK[g["zwrel"]])
        return spans.weekday(index, ref)
    if "zwk" in g:
        return spans.weekend(ref, _ZH_BACK.get(g.get("zwe", ""), 0))
    if "zn" in g:
        return spans.ago(_count(g["zn"]), _ZH_UNIT[g["zunit"]], ref)
    if "zbn" in g:
        return spans.back(_count(g["zbn"]), _ZH_UNIT[g["zbunit"]], ref)
    if "zfew" in g:
        return spans.back(3 if "两" in g["zfew"] else 5, "day", ref)
    if "zpart" in g:
        back = 1 if g.get("zprel", "").startswith(("上", "去")) else 0
        if g["zpunit"] == "年":
            return spans.part_of_year(g["zpart"], ref.year - back)
        start, _ = spans.month_back(ref, back)
        return spans.part_of_month(g["zpart"], start.year, start.month)
    if "zm" in g:
        month = _count(g["zm"])
        if not 1 <= month <= 12:
            return None
        return spans.months(spans.latest_month_year(ref, month), month, month)
    if "zhol" in g:
        return spans.holiday(g["zhol"], ref)
    return None


def _zh_relative(rel: str, season: str | None, ref: date) -> spans.Span:
    year = {"去年": ref.year - 1, "今年": ref.year, "前年": ref.year - 2}.get(rel)
    if season and year is not None:
        return spans.season(season, year)
    if rel in ("前天", "大前天"):
        return spans.day(ref - timedelta(days=2 if rel == "前天" else 3))
    if rel == "前年":
        return spans.months(ref.year - 2, 1, 12)
    if rel == "上上周":
        return spans.week(ref, 2)
    english = {"昨天": "yesterday", "今天": "today", "上周": "last week", "上星期": "last week",
               "上个星期": "last week", "这周": "this week", "本周": "this week",
               "上个月": "last month", "上月": "last month", "这个月": "this month",
               "本月": "this month", "去年": "last year", "今年": "this year"}
    return _relative(english[rel], None, ref)


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
