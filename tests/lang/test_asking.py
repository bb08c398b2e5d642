"""Whether a question asks for one value that holds now, of the one asking: the
questions here are other phrasings than bench/data/changes.json's (which
bench/changes.py measures in two halves)."""

from __future__ import annotations

import pytest

from memoryd.lang.asking import asks_one_now, of_the_asker


@pytest.mark.parametrize("question", [
    "What phone do I have?",
    "Where am I working these days?",
    "Who's my dentist?",
    "what is my current job title",
    "How many kids do I have?",
    "What's my daughter's school called?",
    "How far is my commute?",
    "Do I still play the cello?",
    "Am I vegetarian?",
    "What do I need for my visa now?",
    "What kind of bike do I ride to work?",  # a kind in the singular, of no taste
    "What type of mortgage am I on?",
    "我现在开什么车？",
    "我女儿在哪个学校？",
    "我每周跑几次步？",
    "我的医生是谁？",
])
def test_one_value_now_of_the_asker(question):
    assert asks_one_now(question)


@pytest.mark.parametrize("question", [
    # several answers
    "Which cuisines do I like?",
    "What hobbies do I have?",
    "What are my favourite films?",
    "List the languages I speak.",
    "What kinds of music do I listen to?",
    "What kind of food do I enjoy?",  # a kind of a taste: every one liked
    "What sort of films do I like to watch?",
    "How many days passed between my move and my new job?",
    "Did I go to Rome or to Milan first?",
    "我喜欢哪些菜系？",
    "我都去过什么地方？",
    "我喜欢什么样的音乐？",
    # a statement to confirm
    "I don't like jazz, right?",
    "My sister lives in Oslo, isn't it?",
    "我不喜欢户外运动，对吗？",
    # what another did, what once happened
    "What did you recommend to me?",
    "Which book did you suggest for my trip?",
    "I once told you about a film, what was it called?",
    "How many races have I competed in?",
    "What did I buy recently?",
    "I went to a concert, whose was it?",
    "我最近在忙什么？",
    "你给我推荐过哪部电影？",
    "我曾经提到的那家餐厅叫什么？",
    # not of the asker
    "Where does Caroline live?",
    "What is the capital of Peru?",
])
def test_not_one_value_now_of_the_asker(question):
    assert not asks_one_now(question)


@pytest.mark.parametrize(("question", "asker"), [
    ("Where did I leave my bike?", True),
    ("What's my sister's name?", True),
    ("我把车停在哪里了？", True),
    ("What did you tell me about the hotel?", False),
    ("Can you remind me of the restaurant you suggested?", False),
    ("你给我推荐过哪本书？", False),
    ("Where does Maria live?", False),
])
def test_of_the_asker(question, asker):
    assert of_the_asker(question) is asker

