"""Entities read from the form of a text: each rule in several phrasings, and what
must not be taken for a name."""

from __future__ import annotations

import pytest

from memoryd.lang.names import in_query, key, names


def _strong(text: str) -> list[str]:
    return [e.name for e in names(text) if not e.weak]


def _weak(text: str) -> list[str]:
    return [e.name for e in names(text) if e.weak]


@pytest.mark.parametrize(("text", "expected"), [
    ("I met Ann Smith at the Bank of America in New York.",
     ["Ann Smith", "Bank of America", "New York"]),
    ("We saw a painting by Vincent van Gogh at the museum.", ["Vincent van Gogh"]),
    ("yesterday my sister took Rex to the vet", ["Rex"]),
    ("The talk was hosted by NASA and the LGBTQ+ center.", ["NASA", "LGBTQ"]),
    ("My flight with Lufthansa lands in Zürich at noon.", ["Lufthansa", "Zürich"]),
    ("She said the Toyota Corolla was cheaper than the Tesla.", ["Toyota Corolla", "Tesla"]),
    ("I had coffee with Dr. Smith after the talk.", ["Smith"]),
    ("She works at McKinsey & Company now.", ["McKinsey & Company"]),
    ("I bought an iPhone on eBay.", ["iPhone", "eBay"]),
    ("iPhone batteries wear out.", ["iPhone"]),
])
def test_a_run_of_capitalised_words_is_a_name(text, expected):
    assert _strong(text) == expected


@pytest.mark.parametrize("text", [
    "I'm going in March, on a Friday, if I can.",
    "It's late. That's fine. Let's go. What's next?",
    "OK, lol, see you Sept 3 or Tues.",
])
def test_the_first_person_the_calendar_and_contractions_are_not_names(text):
    assert names(text) == []


@pytest.mark.parametrize(("text", "spoken_to", "named"), [
    ("Melanie: Wow, Caroline! That's great, I signed up for pottery.", "Caroline", "Melanie"),
    ("Caroline: Thanks, Melanie! The necklace is from Sweden.", "Melanie", "Caroline"),
    ("Hey Caroline, hope all's good! We went camping with Jon.", "Caroline", "Jon"),
    ("Yeah, Caroline, my family's been great to Jon.", "Caroline", "Jon"),
    ("That sounds amazing, Ann! Did Priya come too?", "Ann", "Priya"),
    ("Ann, could you ask Priya about the report?", "Ann", "Priya"),
    ("Good morning Dr. Patel! I saw Maria at the clinic.", "Patel", "Maria"),
])
def test_a_name_spoken_to_is_not_what_the_text_is_about(text, spoken_to, named):
    found = [e.name for e in names(text)]
    assert spoken_to not in found and named in found


@pytest.mark.parametrize("text", [
    "I went hiking with Caroline, and it rained.",
    "Thanks to Caroline the party was a success.",
    "We had lunch with Caroline.",
    "Caroline's dog barked all night.",
])
def test_a_name_talked_about_is_kept_even_beside_commas_and_thanks(text):
    assert "Caroline" in _strong(text)


def test_a_word_that_opens_a_sentence_is_a_weak_mention():
    assert _weak("Ann loves tea. Painting is fun.") == ["Ann", "Painting"]
    assert _strong("Ann loves tea. Painting is fun.") == []
    # mid-sentence elsewhere in the text: a name outright
    assert _strong("Ann loves tea. I gave Ann a cup.") == ["Ann"]
    # a run that opens a sentence may be capitalised for that alone, its first word
    # an imperative's verb: weak, and so is what follows its first word
    assert _strong("Use Logseq daily.") == []
    assert _weak("Use Logseq daily.") == ["Use Logseq", "Logseq"]
    assert _weak("Run Prettier before you commit.") == ["Run Prettier", "Prettier"]
    assert _weak("Ann Smith called.") == ["Ann Smith", "Smith"]
    assert _strong("Ann Smith called. I saw Ann Smith later.") == ["Ann Smith"]
    # a possessive, an acronym or camel case is capitalised for itself
    assert _strong("Caroline's dog barked.") == ["Caroline"]
    assert _strong("NASA launched it.") == ["NASA"]


@pytest.mark.parametrize("text", [
    "Never push directly to main, always open a pull request.",
    "Please run make lint before every commit.",
    "Don't touch the files under vendor/, they are generated.",
    "Always Use pnpm here.",
    "my token is [REDACTED:github_token] for now",
    "Please Check the logs first.",
])
def test_imperatives_and_secret_markers_name_no_one(text):
    assert _strong(text) == []


def test_openers_and_honorifics_are_cut_off_the_name():
    assert _strong("I wrote to Dear Mr Smith yesterday") == ["Smith"]
    assert _strong("We listened to The Beatles on the way.") == ["Beatles"]


def test_speakers_links_and_possessives():
    assert _strong("Jon: I finally finished the book.") == ["Jon"]
    assert _strong("See [[Logseq Sync]] and [[whiteboards|the board]].") == [
        "Logseq Sync", "whiteboards"]
    assert [e.key for e in names("I borrowed Zoë's bike from Zoe.")] == ["zoe"]


@pytest.mark.parametrize(("text", "expected"), [
    ("我和张伟去了北京。", ["张伟"]),
    ("王小明说这本书很好看。", ["王小明"]),
    ("昨天李娜给我打电话。", ["李娜"]),
    ("我最喜欢的书是《三体》，还有「活着」。", ["三体", "活着"]),
    ("李老师今天表扬了我。", ["李老师"]),
    ("我和小王去了北京。", ["小王"]),
    ("欧阳娜娜是演员。", ["欧阳娜娜"]),
])
def test_chinese_names_and_titles(text, expected):
    assert sorted(_strong(text)) == sorted(expected)


@pytest.mark.parametrize("text", ["我很高兴。", "周末去上海。", "行李箱在门口。", "我们马上走。",
                                  "老师说了明天考试。", "小时候我住在乡下。"])
def test_everyday_chinese_words_are_not_names(text):
    assert names(text) == []


def test_a_key_matches_however_the_name_is_written():
    assert key("Zoë's") == key("ZOE") == key("zoe’s") == "zoe"
    assert key("  Ann   Smith ") == "ann smith"


def test_a_query_names_the_keys_the_store_holds():
    known = {"caroline", "ann smith", "ann", "bank of america", "张伟", "feature"}.__contains__
    assert in_query("What do Caroline's kids like?", known) == ["caroline"]
    assert in_query("when did ann smith visit the bank of america", known) == [
        "ann smith", "bank of america"]
    assert in_query("张伟喜欢什么？", known) == ["张伟"]
    # a single word only when the query capitalises it: "feature" is a word here
    assert in_query("which feature syncs pages?", known) == []
    assert in_query("Which Feature syncs pages?", known) == ["feature"]
    assert in_query("where does caroline live", known) == []


def test_capitalised_runs_leave_out_what_is_never_a_name():
    """dream's cruder reading (links across categories): the words that open a sentence,
    greet, or name a day are no part of a run."""
    from memoryd.lang.names import capitalised_runs

    assert capitalised_runs("Learned that Ann Smith moved to Berlin on Monday. Thanks "
                            "Ann! Good Morning, The Beatles.") == {
        "Ann Smith", "Berlin", "Ann", "Beatles"}
