"""Whether a question asks for one value that holds now, of the one asking ("How old
am I?", "What car do I drive?", "我的老板是谁？"), English and Chinese.

Such a question has one right answer at a time: of two things the asker said about
it, the later one is the answer, whatever words announced the change ("turned 35",
"traded the Corolla in", "换了一台小米14"). Other questions are not one, and there a
later statement beside an earlier one is one more answer, not a change: those that ask
for several ("which cuisines do I like?", "我喜欢哪些菜系？", "how many days between
…", "X or Y?"), to confirm what they say ("…, right?", "对吗？"), about what another
did ("what did you recommend me?"), or about what happened ("I once told you …",
"recently", "我曾经…", "去过"). The past and a named date are read elsewhere too
(lang/past.py, lang/timewords.py); the ranking stage checks those.

English words match whole, in casefolded text."""

from __future__ import annotations

import re

from memoryd.lang.kinds import names_the_listener, names_the_speaker
from memoryd.lang.past import tells_past
from memoryd.lang.sentences import HAN, has_han

# A tag asks to confirm what the question already says ("I don't like X, right?"): the
# statement it repeats is its answer, not the latest on the topic. A question that
# opens with its verb ("Do I still …?", "Am I …?") asks what holds now, and stays.
_TAG = re.compile(r",\s*(?:right|correct|true|is that right|am i right|isn['’]t it|"
                  r"aren['’]t i|don['’]t i|didn['’]t i|no)\s*\?*\s*$")
# What happened: "I once watched …" ("once a week" is how often), "in the past",
# "recently" (what happened of late, not what holds), a verb the asker did ("I
# attended", "have I played"); a told past ("I went", "yesterday") is lang/past.py's.
_ONCE = re.compile(r"(?<![a-z])(?:once(?!\s+(?:a|an|every|per)(?![a-z]))|recently|lately)"
                   r"(?![a-z])|in the past"
                   r"|(?<![a-z'’])(?:i|i've|i’ve|have i|had i)\s+(?:[a-z]+\s+)?"
                   r"(?!(?:need|feed|speed|seed|breed|bleed|proceed|succeed)(?![a-z]))"
                   r"[a-z]+ed(?![a-z])")
# It asks for several: a word for all or some, or a plural noun after what/which
# ("what cuisines do I …"). "What kind of music do I like?" asks for every kind liked,
# "What kind of car do I drive?" for the one driven: a kind in the singular asks for
# several only of a taste.
_SEVERAL = re.compile(
    r"(?<![a-z])(?:all|any|some|ever|every|list|kinds|types|sorts|things|ways|ones|"
    r"what are|which are|what were|which were|between|total|in total|instead of|compared|"
    r"than)(?![a-z])"
    r"|\s+or\s+"
    r"|(?<![a-z])(?:kind|type|sort) of\b.*(?<![a-z])(?:like|love|enjoy|prefer|fancy|listen|"
    r"watch|eat|read)(?![a-z])"
    r"|(?<![a-z])(?:what|which)\s+(?:[a-z]+\s+){0,3}[a-z]+[^su\W]s\s+"
    r"(?:do|does|did|have|am|are|were|was|is)(?![a-z])")
# Chinese: 我 without 你; several (哪些, 些, 都, 什么样, 类型, 种); a tag (对吗, 是吗, 吧,
# 对不对, 是不是 at the end); what once happened (曾, 过 after a verb, 最近 "of late").
_ZH_SEVERAL = re.compile(r"哪些|些|都|什么样|类型|种|几个方面")
_ZH_TAG = re.compile(r"[，,]\s*(?:对吗|是吗|对吧|是吧|对不对|是不是|没错吧)\s*[？?]?\s*$"
                     r"|吧\s*[？?]?\s*$")
_ZH_ONCE = re.compile(f"曾|最近|近来|[{HAN}]过(?!去|得|来)")


def of_the_asker(question: str) -> bool:
    """Whether `question` asks about the one asking ("I", "my", "我"), not about what
    the one asked did or said ("you", "你")."""
    if names_the_listener(question):
        return False
    return "我" in question if has_han(question) else names_the_speaker(question)


def asks_one_now(question: str) -> bool:
    """Whether `question` asks for one value that holds now, of the one asking."""
    if not of_the_asker(question):
        return False
    if has_han(question):
        return not (_ZH_SEVERAL.search(question) or _ZH_TAG.search(question)
                    or _ZH_ONCE.search(question))
    said = question.casefold()
    return not (_TAG.search(said) or _ONCE.search(said) or tells_past(said)
                or _SEVERAL.search(said))

