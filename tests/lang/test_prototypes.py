"""Chit-chat said like a fact is told from a fact by meaning, with the shipped model:
on sentences written for this test (none of them a prototype, nor a labelled
sentence the margin was chosen on), each with a margin to spare, so another CPU's
rounding does not flip one."""

from __future__ import annotations

import pytest

from memoryd.lang import facts, prototypes
from memoryd.lang.prototypes import MARGIN, Prototypes
from memoryd.models.embedder import OnnxEmbedder

SPARE = 0.05

TALK = [
    "I'm really grateful for all your advice.",
    "I'll definitely look into that.",
    "I'm kind of anxious about the whole thing.",
]
STATED = [
    "I teach chemistry at a high school in Ohio.",
    "My son plays goalkeeper for his school team.",
    "I've been vegetarian since college.",
    "We adopted two kittens from the shelter last spring.",
    "I drive a blue Subaru Outback.",
    "My grandmother turned ninety in March.",
    "I turned 35 yesterday, we had a party.",
    "My dentist is Dr. Lee.",
]


@pytest.fixture(scope="module")
def protos() -> Prototypes:
    return Prototypes(OnnxEmbedder().embed)


def test_none_of_these_sentences_is_a_prototype():
    assert not set(TALK + STATED) & set(prototypes.CHAT + prototypes.FACT)


@pytest.mark.parametrize("sentence", TALK)
def test_talk_said_like_a_fact_is_chit_chat(protos, sentence):
    assert protos.lean(sentence) > MARGIN + SPARE
    assert protos.is_chat(sentence)
    assert facts.extract(sentence, chat=protos.is_chat) == []


@pytest.mark.parametrize("sentence", STATED)
def test_a_fact_is_still_learned(protos, sentence):
    assert protos.lean(sentence) < MARGIN - SPARE
    assert not protos.is_chat(sentence)
    assert facts.extract(sentence, chat=protos.is_chat) == facts.extract(sentence)


@pytest.mark.parametrize("sentence", [
    "Never push directly to main, always open a pull request.",  # a rule
    "Can you recommend a good book?",  # a request
    "我感到很难过。",  # Chinese: the English model does not tell talk from facts
])
def test_only_statements_in_english_are_weighed(sentence):
    def embed(_texts):
        raise AssertionError("the model is not asked")
    assert not Prototypes(embed).is_chat(sentence)


def test_the_model_is_asked_only_of_a_sentence_the_rules_learn_from():
    asked: list[str] = []

    def chat(sentence: str) -> bool:
        asked.append(sentence)
        return sentence.startswith("I feel")

    text = "Thanks! I feel so lost lately. What should I do? I moved to Lyon in May."
    assert facts.extract(text, chat=chat) == ["The user moved to Lyon in May."]
    assert asked == ["I feel so lost lately.", "I moved to Lyon in May."]
