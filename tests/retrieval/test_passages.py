"""A long note's keyword evidence counts for as much as the question's words meet in
one passage of it: a changelog that names each word in another entry does not
outrank the page about the question."""

from __future__ import annotations

from memoryd.lang.terms import terms
from memoryd.retrieval.stages.passages import CACHED, passage_share
from tests.ranking import assert_first, ranked

ENTRIES = [
    "Added a toolbar button for exporting the current page as PDF.",
    "New plugins can now register slash commands.",
    "Fixed the sidebar width after a restart.",
    "Block properties are now shown in the right order.",
    "Faster search in graphs with many journals.",
    "The calendar can show week numbers.",
    "Dragging features from the palette no longer freezes the app.",
    "Whiteboards keep their zoom when you switch pages.",
]
CHANGELOG = "# Changelog\n\n" + "\n".join(
    f"- {entry} (release {n // len(ENTRIES)}.{n % len(ENTRIES)})"
    for n, entry in enumerate(ENTRIES * 8))


def test_the_share_of_the_query_words_one_passage_holds():
    asked = set(terms("add features with plugins"))
    # "plugins" and "features" are never within three lines ("Added" is near "plugins")
    assert passage_share(CHANGELOG, asked) == 2 / 3
    assert passage_share("- Plugins add features to the app.\n- Other text", asked) == 1.0
    assert passage_share("nothing about it", asked) == 1.0
    spread = "\n".join(["plugins here", "a", "b", "c", "features there"])
    assert passage_share(spread, asked) == 0.5
    near = "\n".join(["plugins here", "a", "features there"])  # within three lines
    assert passage_share(near, asked) == 1.0


async def test_the_page_about_the_question_comes_before_a_changelog(harness):
    """Where the changelog's words are spread (two of three within a passage), the page
    wins by a margin. Where three of its four words meet in three lines ("...features...
    the app" and "Added..." two entries on), the two are a coin flip (0.0003 to 0.003
    apart, int8 or fp32): what is decided there is that the changelog's keyword score is
    cut by its passage share, not which of the two is first."""
    page = await harness.write("# Plugins\n\nExtend the app: install a plugin from the "
                               "marketplace to add new functionality.")
    changelog = await harness.write(CHANGELOG)
    spread = await harness.call("memory_explain", query="How do I add features with plugins?")
    assert_first(spread, page)
    assert [c["scores"].get("passages") for c in spread["candidates"]
            if c["id"] == changelog] == [round(2 / 3, 4)]
    near = await harness.call("memory_explain", query="how can plugins add features to the app")
    (long,) = [c for c in near["candidates"] if c["id"] == changelog]
    assert long["scores"]["passages"] == 0.75
    assert {c["id"] for c in ranked(near)[:2]} == {page, changelog}


def test_a_text_read_for_the_query_alone_shares_as_one_read_whole():
    """Under CACHED characters the query's terms are read alone; above, the whole note
    once, kept by its hash: the same share either way."""
    big = CHANGELOG * (CACHED // len(CHANGELOG) + 1)
    for asked in ({"plugin", "featur", "add"}, {"calendar", "week"}, {"absent", "word"}):
        assert passage_share(big, asked, "hash-of-big") == passage_share(big, asked) == \
            passage_share(CHANGELOG, asked)
