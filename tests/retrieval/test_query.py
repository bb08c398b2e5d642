"""A search's question is read once (retrieval/query.py): its terms, the time it
names, whether it asks for a time or about the past, the text the dense side embeds,
the entities it names; gathering and the stages read that value."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memoryd.filters import Filters
from memoryd.lang import names
from memoryd.retrieval import query
from memoryd.retrieval.query import SearchRequest

SPEAKERS = frozenset({"john", "melanie"})
NOW = datetime(2023, 10, 20, 12, tzinfo=UTC).timestamp()


def test_what_a_question_says_is_read_into_the_value():
    asked = query.read(SearchRequest(query="What did John do last weekend?"), SPEAKERS, NOW)
    assert asked.text == "What did John do last weekend?"
    assert asked.embedded == "What did I do last weekend?"
    assert asked.window is not None and asked.window.relative
    assert asked.window.start == datetime(2023, 10, 14, tzinfo=UTC)
    assert "weekend" not in asked.terms and "john" in asked.terms  # relative words out
    assert asked.about_past and not asked.asks_when
    assert asked.named == []  # the corpus's names are read under its hold: `naming`
    assert asked.naming([("john",)]).named == [("john",)]


@pytest.mark.parametrize(("asked", "when", "past"), [
    ("When is Melanie's birthday?", True, False),
    ("What date did Melanie move?", True, True),
    ("Where does the user live now?", False, False),
    ("Where did the user live before?", False, True),
    ("用户以前住在哪里", False, True),
    ("用户什么时候搬家", True, False),
])
def test_it_asks_for_a_time_or_about_the_past(asked, when, past):
    read = query.read(SearchRequest(query=asked), SPEAKERS, NOW)
    assert (read.asks_when, read.about_past) == (when, past)


def test_a_question_asked_as_of_a_time_is_about_the_past():
    at = Filters(as_of=NOW)
    assert query.read(SearchRequest(query="Where does the user live?", where=at),
                      SPEAKERS, NOW).about_past


def test_the_time_it_names_is_read_against_the_reference_then_as_of_then_now():
    long_ago = datetime(2020, 1, 10, tzinfo=UTC).timestamp()
    asked = "what did we do yesterday?"
    by_reference = query.read(SearchRequest(query=asked, reference=long_ago,
                                            where=Filters(as_of=NOW)), (), NOW)
    by_as_of = query.read(SearchRequest(query=asked, where=Filters(as_of=long_ago)), (), NOW)
    by_now = query.read(SearchRequest(query=asked), (), NOW)
    assert by_reference.window is not None and by_as_of.window is not None
    assert by_reference.window.start == by_as_of.window.start == datetime(
        2020, 1, 9, tzinfo=UTC)
    assert by_now.window is not None and by_now.window.start == datetime(
        2023, 10, 19, tzinfo=UTC)


async def test_a_search_splits_its_question_once(harness, monkeypatch):
    """The speakers it addresses and the entities it names are both read from one
    split of the question."""
    await harness.write("John: I went hiking with Melanie on Sunday.", session="s1",
                        role="user")
    splits: list[str] = []
    real = names.query_words

    def counted(text: str) -> names.QueryWords:
        splits.append(text)
        return real(text)

    monkeypatch.setattr(names, "query_words", counted)
    monkeypatch.setattr(query, "query_words", counted)
    out = await harness.call("memory_explain", query="What did John do with Melanie?")
    assert splits == ["What did John do with Melanie?"]
    assert out["embedded_query"] == "What did I do with Melanie?"
    assert out["entities"] == ["john", "melanie"]
