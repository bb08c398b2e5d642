"""Sentences end where sentences end: an abbreviation's full stop, an initial, a
version number, a decimal, a file name or a URL never ends one; the stop after it does."""

from __future__ import annotations

import pytest

from memoryd.lang import facts
from memoryd.lang.sentences import PROSE_SENTENCE_END, sentences


@pytest.mark.parametrize(("text", "expected"), [
    ("My dentist is Dr. Lee. She is kind.", ["My dentist is Dr. Lee.", "She is kind."]),
    ("Mrs. Okafor and Prof. Lindqvist came by.", ["Mrs. Okafor and Prof. Lindqvist came by."]),
    ("We met at 7 p.m. near St. Mark's square.", ["We met at 7 p.m. near St. Mark's square."]),
    ("She grew up in the U.K. and moved later.", ["She grew up in the U.K. and moved later."]),
    ("Bring snacks, e.g. nuts. Water too.", ["Bring snacks, e.g. nuts.", "Water too."]),
    ("It was written by J. K. Rowling, I think.", ["It was written by J. K. Rowling, I think."]),
    ("Upgrade to v2.4.1 first. Then restart.", ["Upgrade to v2.4.1 first.", "Then restart."]),
    ("The fix is in utils/date_parse.py. Review it.",
     ["The fix is in utils/date_parse.py.", "Review it."]),
    ("It weighs 2.75 kg. Heavy!", ["It weighs 2.75 kg.", "Heavy!"]),
    ("Docs live at https://example.org/v1.2/guide. Read them.",
     ["Docs live at https://example.org/v1.2/guide.", "Read them."]),
    ("Real Madrid vs. Barcelona is on. Fun.", ["Real Madrid vs. Barcelona is on.", "Fun."]),
    ("I said no. He left.", ["I said no.", "He left."]),
    ("我住在北京。你呢？", ["我住在北京。", "你呢？"]),
])
def test_a_turn_splits_only_at_sentence_ends(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


def test_a_note_chunks_at_the_same_ends() -> None:
    text = "Ask Dr. Moreau about the U.S. office. It opens at 9 a.m. Monday. Bring ID."
    assert PROSE_SENTENCE_END.split(text) == [
        "Ask Dr. Moreau about the U.S. office.", "It opens at 9 a.m. Monday.", "Bring ID."]


@pytest.mark.parametrize(("said", "learned"), [
    ("My dentist is Dr. Lee.", "Dr. Lee"),
    ("My GP is Dr. Amara Singh, she's great.", "Dr. Amara Singh"),
    ("My landlord is Mr. Petrov.", "Mr. Petrov"),
])
def test_a_fact_keeps_the_name_after_a_title(said: str, learned: str) -> None:
    (fact,) = facts.extract(said, 3)
    assert learned in fact
