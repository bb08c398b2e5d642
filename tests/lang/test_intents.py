"""A reminder is proposed only for a sentence that asks for, or commits to, an action at
its time; a time named in a description (what happens, what happened) is not a plan.
Each case in more than one phrasing, English and Chinese."""

from __future__ import annotations

import pytest

from memoryd.lang.intents import asks_or_commits, sentence_at

PLANS = [
    "Remind me to call Ann tomorrow",
    "remind me on Friday to water the plants",
    "Don't forget the dentist on Tuesday at 3pm",
    "do not forget: passport renewal next Monday",
    "I need to renew the passport by Friday",
    "We have to ship the hotfix tonight",
    "I'll send the report on Monday",
    "We're going to deploy on Thursday night",
    "I'm gonna call mom this weekend tomorrow",
    "Plan to visit grandma next Sunday",
    "Dentist appointment tomorrow at 9 with Dr. Lee",
    "Interview with Acme on Wednesday at 10am",
    "Pick up the kids at 5pm tomorrow",
    "The user needs to call the bank tomorrow",
    "The user will fly to Berlin next Friday",
    "明天记得交报告",
    "提醒我周五给妈妈打电话",
    "别忘了下周一的体检",
    "我明天要去银行",
    "下周一去医院复查",
    "明天下午三点和团队开会",
    "周五晚上八点半有一个线上会议",
    "我打算下周六去爬山",
    "Don't let me forget the dentist on Friday",
    "Ping me Friday about the invoice",
    "let me know tomorrow morning if the build is green",
    "明天早上七点叫我起床",
]
DESCRIPTIONS = [
    "The cutover window is Saturday night",
    "The migration runs Saturday night between 1 and 5",
    "We had lunch on Friday",
    "Lunch was on Friday with the whole team",
    "Lunch is served on Friday at the cafeteria",
    "Release notes: version 2 ships on Friday",
    "The office is closed on Friday",
    "Backups happen every night at 2am",
    "The store opens at 9am on Sunday",
    "上周五讨论了预算",
    "这是重要的通知，周五生效",
    "周五还是晴天",
    "商店周日早上九点开门",
    "昨天下午开了会",
    "Friday's standup was cancelled",
    "Tomorrow the store opens at 9",
    "The conference runs until next Wednesday",
    "明天是星期六",
]


@pytest.mark.parametrize("sentence", PLANS)
def test_a_request_or_a_commitment_is_a_plan(sentence):
    assert asks_or_commits(sentence)


@pytest.mark.parametrize("sentence", DESCRIPTIONS)
def test_a_time_in_a_description_is_not(sentence):
    assert not asks_or_commits(sentence)


def test_the_sentence_that_holds_the_time_decides():
    text = "The cutover window is Saturday night. I need to call Ravi on Friday."
    friday = text.index("Friday")
    assert sentence_at(text, (friday, friday + 6)).strip() == "I need to call Ravi on Friday."
    saturday = text.index("Saturday")
    assert not asks_or_commits(sentence_at(text, (saturday, saturday + 8)))
