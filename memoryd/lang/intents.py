"""Whether a sentence asks for, or commits to, something to be done at its time: the test
a statement passes before dream proposes a reminder for it.

"Remind me to call Ann tomorrow", "I need to renew the passport by Friday", "Dentist
appointment tomorrow at 9", "明天下午三点和团队开会" do; "The cutover window is Saturday
night", "We had lunch on Friday", "会议纪要：上周五讨论了预算" do not (a time named in a
description, or in the past). The cues are the sentence's own words: a request
("remind me", "don't forget", "ping me", "let me know", "记得", "叫我"), an intent or
obligation ("need to", "I'll", "going to", "要", "得", "打算"), or an engagement that
is one ("appointment", "call", "interview", "开会", "预约"). English cues match whole
words."""

from __future__ import annotations

import re

from memoryd.lang import past

_EN = (
    r"remind me|reminder|don'?t forget|do not forget|make sure|remember to|"
    r"(?:don'?t|do not) let me (?:forget|miss)|"
    r"(?:ping|nudge|alert|notify|tell|text|message|wake|call) me|let me know|"
    r"need(?:s)? to|have to|has to|must|should|got to|gotta|"
    r"will|shall|going to|gonna|plan(?:s|ning)? to|intend(?:s)? to|promised? to|"
    r"todo|to-do|to do|"
    r"appointment|meeting|meet(?:s)? with|call|interview|flight|deadline|due|"
    r"pick up|drop off|book|renew|submit|pay|visit"
)
_EN_CUE = re.compile(rf"(?<![a-z])(?:{_EN})(?![a-z])|[a-z]'ll(?![a-z])")
_ZH_CUE = re.compile(r"提醒|记得|别忘|不要忘|叫我|通知我|告诉我|(?:我|我们|你|得|就|还|也)要|"
                     r"得去|需要|必须|应该|打算|计划|准备|约了|预约|开会|会议|面试|航班|截止|提交|交报告|付款|"
                     r"^(?:[^，,]{0,12})去(?!年)")
_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]?")


def sentence_at(text: str, span: tuple[int, int]) -> str:
    """The sentence of `text` that holds `span`."""
    for m in _SENTENCE.finditer(text):
        if m.start() <= span[0] < max(m.end(), m.start() + 1):
            return m.group()
    return text


def asks_or_commits(sentence: str) -> bool:
    """Whether `sentence` asks for, or commits to, an action (see the module's text)."""
    text = sentence.casefold().replace("’", "'")
    if past.tells_past(text):  # a description of what happened, not a plan
        return False
    return bool(_EN_CUE.search(text) or _ZH_CUE.search(text))
