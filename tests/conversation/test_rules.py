"""The deterministic rules of conversation memory: cleaning, the gate, facts,
reconciliation and the checks on a model's reconcile answer."""

from __future__ import annotations

import numpy as np
import pytest

from memoryd.conversation import reconcile
from memoryd.conversation.reconcile import Known
from memoryd.lang import facts, gate, signals
from memoryd.lang.sentences import clean


def test_cleaning_keeps_code_blocks_and_collapses_blank_lines():
    text = "  Cafe\u0301 notes\r\n\r\n\r\n\nnext\n```\na\n\n\n\nb\n```\n\n\n\nend  "
    assert clean(text) == "Café notes\n\nnext\n```\na\n\n\n\nb\n```\n\nend"


@pytest.mark.parametrize(("text", "reason"), [
    ("ok", "too_short"), ("thx!", "too_short"), ("Okay, thanks a lot!", "stop_words"),
    ("好的，谢谢", "stop_words"), ("Error: connection refused (ECONNREFUSED)",
                                 "infrastructure_noise"),
    ("HTTP 429: rate limit exceeded, retry later", "infrastructure_noise"),
    ('Traceback (most recent call last):\n  File "a.py", line 3, in <module>\nKeyError: 1',
     "infrastructure_noise"),
    ("My wife is named Anne", None), ("我住在北京", None),
    ("The rate limit at my gym is annoying but I love lifting weights every single "
     "morning before work, it keeps me sane and I have done it for nine years now, since "
     "I moved to Denver from Boston with my wife Anne and our two kids, who are twelve "
     "and nine, and who both swim on the same team at the community pool downtown.", None),
])
def test_the_relevance_gate(text, reason):
    assert gate.check(clean(text), min_chars=8) == reason


@pytest.mark.parametrize(("text", "expected"), [
    ("My wife is named Anne and I hate mushrooms",
     ["The user's wife is named Anne.", "The user hates mushrooms."]),
    ("I live in Boston.", ["The user lives in Boston."]),
    ("I also have a cat", ["The user also has a cat."]),
    ("I don't like coffee", ["The user doesn't like coffee."]),
    ("我住在北京", ["用户住在北京。"]),
    ("What is my name? Can you help me? Thanks!", []),
    ("I usually go running in the morning", ["The user usually goes running in the morning."]),
    # any "-ly" word before the verb is an adverb, but for the verbs that end so
    ("I mainly love Chinese food and Japanese cuisine.",
     ["The user mainly loves Chinese food and Japanese cuisine."]),
    ("I mostly cook at home", ["The user mostly cooks at home."]),
    ("I definitely prefer window seats", ["The user definitely prefers window seats."]),
    ("I fly to Lisbon every month", ["The user flies to Lisbon every month."]),
    ("I rely on my bike to get to work", ["The user relies on their bike to get to work."]),
    ("I feel like I'm about to faint", ["The user feels like the user is about to faint."]),
    ("I think I lack inspiration", ["The user thinks the user lacks inspiration."]),
    # a greeting opens a statement, and is none: "my friend" is who is addressed
    ("Hi, my name is Emily. Nice to meet you.", ["The user's name is Emily."]),
    ("Hello there, I'm Sam and I live in Leeds.", ["The user is Sam.", "The user lives in Leeds."]),
    ("hey I moved to Berlin last month", ["The user moved to Berlin last month."]),
    ("Good evening! We bought a house in Leeds.",
     ["The user and family bought a house in Leeds."]),
    ("Good morning, my friend.", []), ("My bad.", []), ("My pleasure!", []),
    # what the user asks the assistant to do is no fact about the user
    ("Share with me.", []), ("Recommend me a good book about Rome.", []),
    ("Suggest some places to visit for me.", []),
])
def test_facts_are_statements_about_the_user_in_the_third_person(text, expected):
    assert facts.extract(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    # about this exchange: kept, it would be a "you" no later reader can place
    ("I'm really happy you liked my suggestion!", []),
    ("Your advice helped me a lot.", []),
    ("If you ever want to vent, I'm always around for you.", []),
    ("很高兴你喜欢我的建议。", []),
    # the part that names the listener goes; what the user says of themselves stays
    ("With your help, I finally finished the marathon.",
     ["The user finally finished the marathon."]),
    ("My brother, whom you met last summer, works at Siemens now.",
     ["The user's brother works at Siemens now."]),
    ("我叫李明，很高兴认识你。", ["用户叫李明。"]),
    ("我搬到了杭州，你也知道，在去年秋天。", ["用户搬到了杭州，在去年秋天。"]),
    # a question stays one without its "could you"
    ("I'm curious about the Seiko Presage, could you tell me more about it?", []),
    # no clause left to say anything once the listener's part goes
    ("Sure, if we ever get stuck, we'll ask you.", []),
    # what the speaker did, told to the listener, is an event of theirs
    ("Last night I baked the lemon cake you sent me the recipe for.",
     ["Last night the user baked the lemon cake you sent the user the recipe for."]),
])
def test_what_names_the_listener_is_not_learned(text, expected):
    assert facts.extract(text) == expected


@pytest.mark.parametrize(("text", "family", "team"), [
    ("We deploy the shop with Kamal.", "The user and family deploy the shop with Kamal.",
     "The team deploys the shop with Kamal."),
    ("We're on Postgres 16 now.", "The user and family are on Postgres 16 now.",
     "The team is on Postgres 16 now."),
    ("We always squash our merges.", "The user and family always squash the user's merges.",
     "The team always squashes the team's merges."),
    ("We don't use Docker in production.",
     "The user and family don't use Docker in production.",
     "The team doesn't use Docker in production."),
    ("We switched from Jenkins to GitHub Actions.",
     "The user and family switched from Jenkins to GitHub Actions.",
     "The team switched from Jenkins to GitHub Actions."),
    ("We are moving the API to Rust.", "The user and family are moving the API to Rust.",
     "The team is moving the API to Rust."),
    ("Our staging database is Postgres 16.", "The user's staging database is Postgres 16.",
     "The team's staging database is Postgres 16."),
    ("我们每周四发布。", "用户一家每周四发布。", "团队每周四发布。"),
    ("We mostly deploy on Tuesdays.", "The user and family mostly deploy on Tuesdays.",
     "The team mostly deploys on Tuesdays."),
])
def test_we_is_the_family_in_a_conversation_and_the_team_in_a_project(text, family, team):
    assert facts.extract(text) == [family]
    assert facts.extract(text, team=True) == [team]


def test_at_most_three_facts():
    text = "I live in Oslo. I work at Acme. I have a dog. I love jazz. I am 40."
    assert len(facts.extract(text)) == 3


def _known(*texts: str) -> list[Known]:
    return [Known(f"k{n}", t) for n, t in enumerate(texts)]


@pytest.mark.parametrize(("old", "new", "event"), [
    ("The user lives in Boston.", "The user moved to Denver.", "UPDATE"),
    ("The user loves pizza.", "The user hates pizza now.", "UPDATE"),
    ("The user's favorite color is blue.", "The user's favorite color is green.", "UPDATE"),
    ("用户住在北京。", "用户搬到上海了。", "UPDATE"),
    ("The user has a dog named Rex.", "The user also has a cat.", "ADD"),
    ("The user loves pizza.", "The user loves pasta.", "ADD"),
    ("The user lives in Boston.", "The user lives in Boston", "NONE"),
])
def test_heuristic_reconciliation(old, new, event):
    (decision,) = reconcile.heuristic([new], [None], _known(old), 0.92)
    assert decision.event == event
    assert decision.target == (None if event == "ADD" else "k0")


def test_a_near_duplicate_by_cosine_is_none():
    v = np.ones(4, dtype=np.float32) / 2
    (decision,) = reconcile.heuristic(["The user has two kids."], [v],
                                      [Known("k", "The user has 2 children.", v)], 0.92)
    assert (decision.event, decision.target) == ("NONE", "k")


def test_a_model_answer_is_checked_and_never_loses_a_new_fact():
    short = {"0": "real-id"}
    new = ["The user hates pizza."]
    got = reconcile.from_llm({"memory": [{"id": "0", "text": "The user hates pizza.",
                                          "event": "UPDATE"}]}, new, short)
    assert [(d.event, d.target) for d in got] == [("UPDATE", "real-id")]
    # Only deletes: the new fact is added all the same.
    got = reconcile.from_llm({"memory": [{"id": "0", "text": "", "event": "DELETE"}]},
                             new, short)
    assert [(d.event, d.target) for d in got] == [("DELETE", "real-id"), ("ADD", None)]
    # An unknown id: an UPDATE becomes an ADD, a DELETE is ignored.
    got = reconcile.from_llm({"memory": [
        {"id": "7", "text": "The user hates pizza.", "event": "UPDATE"},
        {"id": "9", "text": "", "event": "DELETE"}]}, new, short)
    assert [(d.event, d.target) for d in got] == [("ADD", None)]
    assert "unknown id" in got[0].reason
    with pytest.raises(reconcile.BadAnswer):
        reconcile.from_llm({"facts": []}, new, short)


def test_importance_and_type_routing():
    assert signals.route_type("I hate mushrooms", True) == "procedural"
    assert signals.route_type("Right now I'm debugging the parser", False) == "working"
    assert signals.route_type("My sister lives in Oslo", True) == "semantic"
    assert signals.route_type("We talked about the trip", False) == "episodic"
    assert signals.salience("I told Anne I prefer tea since 2019") == pytest.approx(0.9)
    assert signals.novelty(np.array([1.0, 0.0]), None) == 1.0
    assert signals.novelty(np.array([1.0, 0.0]), np.array([2.0, 0.0])) == 0.0
    assert signals.importance(1.0, 0.5) == 0.8


def test_a_model_answer_writes_no_more_than_it_was_given_and_changes_a_fact_once():
    short = {"0": "paris-id", "1": "job-id"}
    new = ["The user lives in Berlin."]
    flood = [{"id": "", "text": f"The user owns boat number {n}.", "event": "ADD"}
             for n in range(2000)]
    got = reconcile.from_llm({"memory": flood}, new, short)
    assert [d.event for d in got] == ["ADD", "ADD"]  # twice the facts given, at most
    assert "1998 × more new facts than were given" in got[0].reason
    got = reconcile.from_llm({"memory": [
        {"id": "0", "text": "The user lives in Berlin.", "event": "UPDATE"},
        {"id": "0", "text": "The user lives in Munich.", "event": "UPDATE"},
        {"id": "0", "text": "", "event": "DELETE"},
        {"id": "1", "text": "The user lives in Berlin.", "event": "UPDATE"}]}, new, short)
    assert [(d.event, d.target, d.text) for d in got] == [
        ("UPDATE", "paris-id", "The user lives in Berlin."),
        ("ADD", None, "The user lives in Munich.")]
    assert "UPDATE of an id already changed '0', added" in got[1].reason
    assert "a second DELETE of one id" in got[0].reason
    assert "a text given twice" in got[0].reason
