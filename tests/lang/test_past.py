"""One table of the words that place what is said before now, read three ways
(lang/past.py): a statement that tells of the past asks for no reminder, a question
about the past wants what was current then, a question about a change is shown what a
fact replaced."""

from __future__ import annotations

import pytest

from memoryd.lang import past


@pytest.mark.parametrize(("sentence", "told"), [
    ("we went to the dentist on friday", True),
    ("the launch happened two weeks ago", True),
    ("had lunch with ann yesterday", True),
    ("上周五和团队开了会", True),
    ("吃完饭了", True),
    ("remind me to call the dentist on friday", False),
    ("i need to renew the passport by march", False),
    ("明天下午三点开会", False),
])
def test_a_statement_that_tells_of_the_past(sentence, told):
    assert past.tells_past(sentence) is told


@pytest.mark.parametrize(("question", "asked"), [
    ("Where did the user work in 2019?", True),
    ("What phone did I use to have?", True),
    ("Which team was Ann on back then?", True),
    ("What was the user's job originally?", True),
    ("他以前住在哪里？", True),
    ("当时用户在哪家公司？", True),
    ("Where does the user work now?", False),
    ("What phone does Ann have?", False),
    ("用户现在住在哪里？", False),
])
def test_a_question_about_the_past(question, asked):
    assert past.asks_past(question) is asked


@pytest.mark.parametrize(("question", "asked"), [
    ("Has the user switched editors?", True),
    ("Does Ann still live in Lisbon?", True),
    ("What was my previous employer?", True),
    ("Where did the user live before moving?", True),
    ("Is the old laptop no longer used?", True),
    ("用户换了手机吗？", True),
    ("What editor does the user like?", False),
    ("用户喜欢什么编辑器？", False),
])
def test_a_question_about_a_change(question, asked):
    assert past.asks_change(question) is asked


def test_the_readings_share_the_table():
    """What held before ("used to", "before", "以前") is both a question about the past
    and about a change; a past form of "be" tells, and asks, of the past."""
    for words in past.EARLIER + past.ZH_EARLIER:
        assert past.asks_past(f"x {words} y") and past.asks_change(f"x {words} y")
    for word in past.WAS + past.AGO:
        assert past.asks_past(f"x {word} y") and past.tells_past(f"x {word} y")
