"""Time in a question: the window each expression names, read against a reference,
English and Chinese, absolute and relative; and ranking that boosts (never filters)
the memories of that window, against `reference_time` for a replayed conversation."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from memoryd.lang.timewords import asks_when, find, find_at, states_time, without
from tests.ranking import assert_first

REF = datetime(2023, 10, 20, 15, tzinfo=UTC)  # a Friday


# Phrasings beyond a date and the calendar's words, read against the same Friday.
MORE_WAYS = [
    # weekdays: the latest one ("last": before the reference's day), a week before it
    ("what did I cook last Sunday", date(2023, 10, 15), date(2023, 10, 16)),
    ("last Friday?", date(2023, 10, 13), date(2023, 10, 14)),
    ("what happened on Monday", date(2023, 10, 16), date(2023, 10, 17)),
    ("the Saturday before last", date(2023, 10, 7), date(2023, 10, 8)),
    ("what changed since Tuesday", date(2023, 10, 17), date(2023, 10, 21)),
    ("上周三做了什么", date(2023, 10, 11), date(2023, 10, 12)),
    ("星期二去了哪", date(2023, 10, 17), date(2023, 10, 18)),
    # weekends
    ("the weekend before last", date(2023, 10, 7), date(2023, 10, 9)),
    ("what did we do this past weekend", date(2023, 10, 14), date(2023, 10, 16)),
    ("two weekends ago", date(2023, 10, 7), date(2023, 10, 9)),
    ("上个周末去哪了", date(2023, 10, 14), date(2023, 10, 16)),
    # a part of a month or a year, a week of a month, a season of a year
    ("in late April", date(2023, 4, 21), date(2023, 5, 1)),
    ("at the end of May", date(2023, 5, 21), date(2023, 6, 1)),
    ("mid-March plans", date(2023, 3, 11), date(2023, 3, 21)),
    ("the first week of May 2022", date(2022, 5, 1), date(2022, 5, 8)),
    ("the last week of September", date(2023, 9, 24), date(2023, 10, 1)),
    ("in the summer of 2022", date(2022, 6, 1), date(2022, 9, 1)),
    ("the fall of 2021", date(2021, 9, 1), date(2021, 12, 1)),
    ("late last year", date(2022, 9, 1), date(2023, 1, 1)),
    ("上个月底买了什么", date(2023, 9, 21), date(2023, 10, 1)),
    ("去年年底", date(2022, 9, 1), date(2023, 1, 1)),
    ("五月份去了哪", date(2023, 5, 1), date(2023, 6, 1)),
    # holidays on a fixed day
    ("what did we eat last Christmas", date(2022, 12, 25), date(2022, 12, 26)),
    ("on Halloween", date(2022, 10, 31), date(2022, 11, 1)),
    ("Christmas 2021", date(2021, 12, 25), date(2021, 12, 26)),
    ("国庆去了哪", date(2023, 10, 1), date(2023, 10, 8)),
    # a span back to the reference
    ("in the past two weeks", date(2023, 10, 7), date(2023, 10, 21)),
    ("the last few days", date(2023, 10, 18), date(2023, 10, 21)),
    ("最近三天", date(2023, 10, 18), date(2023, 10, 21)),
    ("前几天说的", date(2023, 10, 16), date(2023, 10, 21)),
    ("大前天", date(2023, 10, 17), date(2023, 10, 18)),
]


@pytest.mark.parametrize(("question", "start", "end"), [
    ("What did Melanie show Caroline on October 13, 2023?", date(2023, 10, 13), date(2023, 10, 14)),
    ("what happened on 13 October 2023", date(2023, 10, 13), date(2023, 10, 14)),
    ("what did I buy on the 1st of February, 2023", date(2023, 2, 1), date(2023, 2, 2)),
    ("anything from 2023-05-03?", date(2023, 5, 3), date(2023, 5, 4)),
    ("2023年5月3日吃了什么", date(2023, 5, 3), date(2023, 5, 4)),
    ("What setback did Melanie face in October 2023?", date(2023, 10, 1), date(2023, 11, 1)),
    ("plans for Dec 2022", date(2022, 12, 1), date(2023, 1, 1)),
    ("2022年12月的账单", date(2022, 12, 1), date(2023, 1, 1)),
    ("How often did she go to the beach in 2022?", date(2022, 1, 1), date(2023, 1, 1)),
    ("2021年的旅行", date(2021, 1, 1), date(2022, 1, 1)),
    ("When did Melanie go camping in June?", date(2023, 6, 1), date(2023, 7, 1)),
    ("what did we do in November", date(2022, 11, 1), date(2022, 12, 1)),  # the last one
    ("what did I eat yesterday", date(2023, 10, 19), date(2023, 10, 20)),
    ("昨天吃了什么", date(2023, 10, 19), date(2023, 10, 20)),
    ("前天去了哪", date(2023, 10, 18), date(2023, 10, 19)),
    ("who did I meet last week", date(2023, 10, 9), date(2023, 10, 16)),
    ("上周见了谁", date(2023, 10, 9), date(2023, 10, 16)),
    ("what did we do last weekend", date(2023, 10, 14), date(2023, 10, 16)),
    ("which book did I read last month", date(2023, 9, 1), date(2023, 10, 1)),
    ("上个月读了什么书", date(2023, 9, 1), date(2023, 10, 1)),
    ("Where did John travel last year?", date(2022, 1, 1), date(2023, 1, 1)),
    ("去年去了哪里", date(2022, 1, 1), date(2023, 1, 1)),
    ("what did we do last summer", date(2023, 6, 1), date(2023, 9, 1)),
    ("我们去年夏天去了哪里", date(2022, 6, 1), date(2022, 9, 1)),
    # A day without its year: the latest one at or before the reference.
    ("On May 2nd, which movie did I watch?", date(2023, 5, 2), date(2023, 5, 3)),
    ("what was my mood on October 3rd", date(2023, 10, 3), date(2023, 10, 4)),
    ("Oct. 20 plans?", date(2023, 10, 20), date(2023, 10, 21)),
    ("what did we eat on the 1st of October?", date(2023, 10, 1), date(2023, 10, 2)),
    ("I told you on 14 October where I was going", date(2023, 10, 14), date(2023, 10, 15)),
    ("what happened on December 25th?", date(2022, 12, 25), date(2022, 12, 26)),
    ("May 4th is not my birthday, right?", date(2023, 5, 4), date(2023, 5, 5)),
    ("我5月2号去了哪", date(2023, 5, 2), date(2023, 5, 3)),
    ("12月25日吃了什么", date(2022, 12, 25), date(2022, 12, 26)),
    *MORE_WAYS,
])
def test_each_expression_names_its_window(question, start, end):
    window = find(question, REF)
    assert window is not None and (window.start.date(), window.end.date()) == (start, end)


def test_words_that_are_not_a_time_here():
    for question in ("what do I do on Mondays", "I sat down", "leaving early may help",
                     "the late may cause trouble", "sunny days ahead", "we wed young"):
        assert find(question, REF) is None, question


def test_a_weekday_or_a_holiday_stays_a_keyword():
    """A memory says "Saturday" or "Christmas"; it says no "last" or "ago"."""
    for question in ("what did we do on Saturday?", "what did we eat at Christmas?"):
        assert without(question, find(question, REF)) == question


@pytest.mark.parametrize(("question", "around"), [
    ("three months back", date(2023, 7, 22)),
    ("a fortnight ago", date(2023, 10, 6)),
    ("what did I do two weeks ago", date(2023, 10, 6)),
    ("where did Caroline move from 4 years ago?", date(2019, 10, 21)),
    ("三天前说了什么", date(2023, 10, 17)),
])
def test_so_long_ago_is_a_window_around_that_day(question, around):
    window = find(question, REF)
    assert window is not None and window.start.date() <= around < window.end.date()


def test_the_most_specific_wins_and_no_time_is_none():
    window = find("in 2023, what did I do on May 3, 2023?", REF)
    assert window is not None and window.start.date() == date(2023, 5, 3)
    for question in ("what pets does the user have?", "May I ask something?",
                     "room 2023b is booked", "用户喜欢什么", "room 5 may be free",
                     "we may 3 times a week", "see you at May 2:30"):
        assert find(question, REF) is None, question
    assert find("on May 3, 2023, or May 4th?", REF).start.date() == date(2023, 5, 3), \
        "a day with its year before one without"
    assert find("February 30th", REF) is None, "no such day, no year: none"
    no_such_day = find("what happened on February 30, 2023?", REF)
    assert no_such_day is not None and no_such_day.start.date() == date(2023, 1, 1), \
        "no such day: the year it names"
    assert find_at("last year", 1e15) is None, "past what a date holds: none, no error"


def test_a_relative_expression_is_no_keyword_a_date_stays_one():
    assert without("what did we do last weekend?", find("what did we do last weekend?", REF)
                   ).split() == ["what", "did", "we", "do", "?"]
    dated = "what happened in May 2023?"
    assert without(dated, find(dated, REF)) == dated  # indexed text carries the day


@pytest.mark.parametrize(("question", "asks"), [
    ("When did Caroline go to the support group?", True),
    ("when was the last time I called Ann", True),
    ("On what date did we sign the lease?", True),
    ("What day did Ann arrive?", True),
    ("Which year did he graduate?", True),
    ("How long ago did we move?", True),
    ("Since when has she lived in Leeds?", True),
    ("Ann什么时候搬家的？", True),
    ("我们哪天去的博物馆？", True),
    ("What pet does the user have?", False),
    ("Where does Ann live?", False),
    ("What time zone am I in?", False),
    ("Whenever I travel, what do I pack?", False),
    ("用户喜欢什么？", False),
])
def test_a_question_that_asks_for_a_time(question, asks):
    assert asks_when(question) is asks


@pytest.mark.parametrize(("text", "says"), [
    ("I went to a support group yesterday", True),
    ("We moved last week.", True),
    ("She got the job two years ago", True),
    ("On Saturday we hiked up Snowdon", True),
    ("back in March we adopted a cat", True),
    ("I started this job in 2019", True),
    ("我昨天去了博物馆", True),
    ("5月3日我们见了面", True),
    ("我上个月换了工作", True),
    ("I may go hiking", False),
    ("I love hiking with my dog", False),
    ("我喜欢猫", False),
])
def test_a_memory_that_says_when(text, says):
    assert states_time(text) is says


async def test_a_question_that_asks_when_finds_the_memory_that_says_when(harness):
    """Of two memories of the same thing, a question asking when ranks first the one
    that says a time (memory_explain: `says_when`), by a margin; any other question gives
    neither the credit. (Told in other words, "Ann and I went to that pottery class last
    Saturday", the dated one is 0.09 further in meaning, which the credit only just
    makes up: a coin flip between CPUs, not behaviour.)"""
    plain = await harness.write("Ann went to the pottery class")
    dated = await harness.write("Ann went to the pottery class last Saturday")
    assert_first(await harness.call("memory_explain",
                                    query="When did Ann go to the pottery class?"), dated)
    out = await harness.call("memory_smart_search", query="When did Ann go to the pottery class?")
    assert out["memories"][0]["scores"]["says_when"] > 0
    assert all("says_when" not in m["scores"] for m in out["memories"] if m["id"] == plain)
    out = await harness.call("memory_smart_search", query="Who went to the pottery class?")
    assert all("says_when" not in m["scores"] for m in out["memories"])


async def test_a_memory_of_the_named_time_ranks_first(harness):
    """Three alike memories of three days; each question about a day finds its own
    first, read against the replayed conversation's reference time."""
    days = {"hiking": datetime(2023, 10, 14, 10, tzinfo=UTC),
            "museum": datetime(2023, 10, 7, 10, tzinfo=UTC),
            "cinema": datetime(2023, 9, 9, 10, tzinfo=UTC)}
    ids = {what: await harness.write(f"We spent the day together, the {what} was fun",
                                     created_at=when) for what, when in days.items()}
    ref = "2023-10-20T12:00:00Z"
    for question, want in (("what did we do last weekend?", "hiking"),
                           ("what did we do two weeks ago?", "museum"),
                           ("what did we do in September?", "cinema"),
                           ("what did we do on October 7, 2023?", "museum"),
                           ("what did we do on the 7th of October?", "museum"),
                           ("and on Sept 9th?", "cinema")):
        out = await harness.call("memory_smart_search", query=question, reference_time=ref)
        assert out["memories"][0]["id"] == ids[want], question
        assert out["memories"][0]["scores"]["when"] > 0
    # without a reference, "last weekend" is this week's: no memory is boosted
    out = await harness.call("memory_smart_search", query="what did we do last weekend?")
    assert all(m["scores"]["when"] < 0.01 for m in out["memories"])
