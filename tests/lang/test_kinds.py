"""What kind of thing a sentence says, by its structure. The sentences here are other
phrasings than those the rules were tuned on (bench/data/messages holds the real
ones, and bench/sentence_types.py measures both halves of them)."""

from __future__ import annotations

import pytest

from memoryd.lang import facts
from memoryd.lang.kinds import kind_of, of_the_speaker


@pytest.mark.parametrize("said", [
    "Never merge your own pull request without a review.",
    "Don't commit anything under build/, it's regenerated on every run.",
    "Always squash before merging into develop.",
    "Make sure the migrations run cleanly on an empty database.",
    "Be sure to bump the version in pyproject.toml for every release.",
    "Prefer composition over inheritance in the service layer.",
    "Avoid global state in the request handlers.",
    "Keep modules under 400 lines.",
    "Write docstrings for every public function.",
    "If a test needs the network, mark it as slow.",
    "When you add an endpoint, document it in docs/api.md.",
    "Only touch the generated client through its wrapper.",
    "Environment variables must be read in config.py and nowhere else.",
    "New dependencies should be pinned to a minor version.",
    "You'll want to run the formatter before pushing.",
    "We don't recommend mocking the database in integration tests.",
    "Please never force-push to a shared branch.",
    "提交之前一定要跑一遍测试。",
    "不要直接修改 vendor 目录下的文件。",
])
def test_a_standing_rule_however_it_is_said(said: str) -> None:
    assert kind_of(said) == "rule", said


@pytest.mark.parametrize("said", [
    "Can you rename the Cart component to Basket?",
    "Could you add a retry to the upload function",
    "Fix the failing test in test_orders.py.",
    "Run the tests.",
    "ok now deploy the staging build",
    "Do you have any suggestions for naming this module?",
    "Help me write a migration for the new column.",
    "能不能帮我看一下这个报错？",
])
def test_a_request_for_now_is_not_a_rule(said: str) -> None:
    assert kind_of(said) == "request", said


@pytest.mark.parametrize(("said", "kind"), [
    ("How do I run the test suite here?", "question"),
    ("What does the --dry-run flag do?", "question"),
    ("Why is the build so slow today?", "question"),
    ("The payments service talks to Stripe through a webhook.", "fact"),
    ("Logs are shipped to Loki every 30 seconds.", "fact"),
    ("I moved to Berlin last spring.", "fact"),
    ("My sister works at a bakery.", "fact"),
    ("I really like working late at night.", "preference"),
    ("Thanks, that did it!", "chat"),
    ("Hello again!", "chat"),
    ("Wow, that looks amazing!", "chat"),
    # a pronoun's contraction holds the verb: a statement, not a fragment
    ("They're kept in a separate bucket per region.", "fact"),
    ("我最近搬到了上海。", "fact"),
    # of something else: a fact when it names something, chit-chat when it only feels
    ("生产环境跑在 Kubernetes 1.29 上。", "fact"),
    ("测试数据放在 fixtures 目录下。", "fact"),
    ("今天真不错。", "chat"),
    ("我特别喜欢喝绿茶。", "preference"),
    ("谢谢你的建议。", "chat"),
])
def test_questions_facts_preferences_and_talk(said: str, kind: str) -> None:
    assert kind_of(said) == kind, said


@pytest.mark.parametrize(("said", "rule"), [
    # the speaker's own "can't" is no rule of anyone's
    ("I can't stop thinking about that trip to Lisbon.", False),
    ("I cannot believe how fast the kids grow.", False),
    # a condition's modal binds nothing; the clause it governs decides
    ("If you ever need to vent, I'm around all evening.", False),
    ("If you need the logs, I can send them tonight.", False),
    ("If the schema changes, you must regenerate the client.", True),
])
def test_a_modal_makes_a_rule_only_of_the_clause_it_binds(said: str, rule: bool) -> None:
    assert (kind_of(said) == "rule") is rule, said


def test_a_projects_rules_and_facts_are_kept_in_the_speakers_words() -> None:
    said = ("ok so a few things. never push straight to main, open a PR instead. "
            "The CI runs on GitHub Actions with Python 3.12. can you fix the lint errors?")
    assert facts.extract(said, 5, team=True) == [
        "Never push straight to main, open a PR instead.",
        "The CI runs on GitHub Actions with Python 3.12."]
    # how things stand this moment, or what happened, is no standing fact of the project
    assert facts.extract("The build is broken right now. The deploy failed yesterday.",
                         5, team=True) == []
    # in Chinese too, with a name or a command in Latin letters inside
    assert facts.extract("线上数据库是 MySQL 8。我们用 uv 管理依赖。", 5, team=True) == [
        "线上数据库是 MySQL 8。", "团队用 uv 管理依赖。"]
    # a sentence that names the speaker is theirs, not the project's: never kept as
    # said, whatever else it holds
    for learned in facts.extract("That screenshot reminds me of our old dashboard.", 3,
                                 team=True):
        assert " me " not in f" {learned} " and "the user" in learned.lower(), learned
    # in a person's own memory a sentence is still rewritten as the user's fact
    (fact,) = facts.extract("I always run the tests before I push.", 3)
    assert fact.startswith("The user always runs the tests")


@pytest.mark.parametrize(("said", "speaker"), [
    ("I moved to Berlin last spring.", True),
    ("Last week my sister came to visit.", True),
    ("The CI runs on GitHub Actions.", False),
    ("Can you send me the report?", False),
    ("我最近搬到了上海。", True),
    ("上个月，我开始学小提琴。", True),
    ("你给我推荐过哪些书？", False),  # 我 the object of what the other did
    ("他们给我们发了邮件。", False),
])
def test_the_speaker_is_the_subject_not_the_object(said: str, speaker: bool) -> None:
    assert of_the_speaker(said) is speaker, said
