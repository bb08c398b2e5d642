"""A note's title is a field of its own: its words count again in keyword scoring, and
it is embedded apart from the note, so a question about a note's subject finds the
note that is about it before a long one that only mentions its words."""

from __future__ import annotations

from memoryd.lang import terms
from memoryd.retrieval.chunks import title_span
from memoryd.schema import Memory


def test_a_title_is_the_first_line_when_it_is_a_heading():
    assert terms.title_of("# Spaced repetition\n\nCards come back...") == "Spaced repetition"
    assert terms.title_of("\n## Keyboard shortcuts  \nmod+k") == "Keyboard shortcuts"
    assert terms.title_of("No heading here\n# Later heading") is None
    assert terms.title_of("#\n\nbody") is None
    content = "  # Zotero\n\nImport references."
    start, end = title_span(content) or (0, 0)
    assert content[start:end] == "Zotero"
    assert title_span("plain text") is None


def test_the_title_counts_again_among_the_keywords():
    titled = Memory(id="a", content="# Flashcards\n\nCards you review.")
    plain = Memory(id="b", content="Flashcards\n\nCards you review.")
    assert terms.index_terms(titled, terms.index_text(titled)).count("flashcard") == \
        terms.TITLE_WEIGHT
    assert terms.index_terms(plain, terms.index_text(plain)).count("flashcard") == 1


LONG = "\n\n".join(
    f"## Release {n}\n\nFixed a bug where flashcards and cards in the review queue "
    f"showed the wrong card count after a sync; studying cards and flashcards again "
    f"works, and spaced repetition settings for cards are kept (item {n})."
    for n in range(40))


async def test_the_note_about_a_subject_comes_before_a_long_one_that_mentions_it(harness):
    about = await harness.write("# Flashcards\n\nTurn a block into a card with #card; "
                                "review them with the spaced repetition scheduler.")
    await harness.write("# Changelog\n\n" + LONG)
    for question in ("How do I make flashcards to study?",
                     "how can I quiz myself with flash cards"):
        out = await harness.call("memory_smart_search", query=question)
        assert out["memories"][0]["id"] == about, question
