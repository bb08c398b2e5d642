"""A question about speakers, in their voice (lang/voice.py): each speaker's
name becomes "I" or "my" and the verb agrees; a question about someone who is not a
speaker stays as asked."""

from __future__ import annotations

import pytest

from memoryd.lang.voice import in_voice

SPEAKERS = frozenset({"john", "melanie", "ann smith", "jon", "gina"})


@pytest.mark.parametrize(("asked", "embedded"), [
    ("What exercises has John done?", "What exercises have I done?"),
    ("Has John ever been to Paris?", "Have I ever been to Paris?"),
    ("Does Melanie like camping?", "Do I like camping?"),
    ("Why is Melanie so tired lately?", "Why am I so tired lately?"),
    ("John is a teacher, right?", "I am a teacher, right?"),
    ("When did Melanie go camping in June?", "When did I go camping in June?"),
    ("What is John's favourite team?", "What is my favourite team?"),
    ("What did Melanie’s kids paint?", "What did my kids paint?"),  # a curly apostrophe
    ("Where does Ann Smith live now?", "Where do I live now?"),
    ("What did JOHN say about it?", "What did I say about it?"),
    ("Did John tell John's boss?", "Did I tell my boss?"),
    ("What do Jon and Gina both have in common?", "What do I and I both have in common?"),
    ("Did Gina visit Jon's studio?", "Did I visit my studio?"),
])
def test_each_speaker_a_question_names_becomes_i(asked, embedded):
    assert in_voice(asked, SPEAKERS) == embedded


@pytest.mark.parametrize("asked", [
    "What did Joanna make for dinner?",  # not a speaker
    "what has john done?",  # a lower-case word is not read as a name
    "Where does Johnny live?",  # another name that begins the same
    "What did I do last weekend?",
])
def test_a_question_that_names_no_speaker_stays_as_asked(asked):
    assert in_voice(asked, SPEAKERS) == asked


def test_no_speakers_no_change():
    assert in_voice("What has John done?", frozenset()) == "What has John done?"
