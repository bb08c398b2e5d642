"""A coding agent's conventions, said once each between ordinary requests in one
session of a project, are shown at the next session's start in the words they were
said; the requests and questions around them are not."""

from __future__ import annotations

from tests.rig import Rig

SHOP = "project:shop-1a2b3c4d"
SAID = [  # (what the user said, whether it is a standing rule or a fact of the project)
    ("can you look at why the checkout test fails?", False),
    ("Never merge to release without a second review, open a PR against develop.", True),
    ("The staging database runs MariaDB 10.11 on port 3307.", True),
    ("ok run the suite again", False),
    ("Please make sure you run `make fmt` before each commit.", True),
    ("Don't edit anything in third_party/, it's vendored.", True),
    ("How do I start the dev server here?", False),
    ("Prefer small, focused commits with imperative messages.", True),
    ("All timestamps are stored in UTC.", True),
    ("thanks, that fixed it", False),
    ("We deploy with Ansible from the ops repo.", True),
    ("Keep API handlers free of SQL, go through the repository layer.", True),
]


async def test_conventions_said_once_are_shown_at_the_next_sessions_start(rig: Rig):
    for n, (content, _) in enumerate(SAID):
        got = await rig.result("memory_remember", session="s-monday", role="user",
                               content=content, scope=SHOP)
        assert got["stored"] is True, content
        await rig.result("memory_remember", session="s-monday", role="assistant",
                         content=f"Done with step {n}: I looked at it and changed what "
                                 "was needed.", scope=SHOP)
    await rig.engine.learning.drain()
    start = (await rig.result("memory_context", project=SHOP))["text"]
    # in the words said; "we" of a project is its team ("The team deploys with ...")
    kept = [content.replace("We deploy", "The team deploys") for content, rule in SAID
            if rule]
    shown = [content for content in kept if content.rstrip(".") in start]
    assert shown == kept, f"missing: {sorted(set(kept) - set(shown))}\n{start}"
    assert "checkout test" not in start and "dev server" not in start
    assert "thanks" not in start.lower()
    rules, _ = await rig.engine.reads.list_memories(
        _filters(type="procedural"), limit=50, offset=0)
    assert any("make fmt" in m.content for m in rules)  # how to work: procedural


def _filters(**kw):
    from memoryd.filters import Filters
    return Filters(scopes=[SHOP], kind="fact", **kw)


async def test_rules_said_after_a_projects_fact_do_not_push_it_off_the_start(rig: Rig):
    """The start shows every rule anyway; the newest facts it shows beside them are
    the others, however many rules were said since."""
    said = ["The billing service talks to Stripe through a webhook on /hooks/stripe.",
            *[f"Always run the {step} step before you open a pull request."
              for step in ("lint", "format", "typecheck", "unit test", "contract test",
                           "migration check", "license scan", "bundle size", "a11y")]]
    for content in said:
        await rig.result("memory_remember", session="s-tuesday", role="user",
                         content=content, scope=SHOP)
    await rig.engine.learning.drain()
    start = (await rig.result("memory_context", project=SHOP))["text"]
    assert said[0].rstrip(".") in start, start
    assert all(rule.rstrip(".") in start for rule in said[1:]), start


async def test_a_projects_fact_is_shown_however_many_rules_came_after_it(rig: Rig):
    """More rules said since than the start shows: the fact is still among its newest
    others."""
    fact = "The billing service talks to Stripe through a webhook on /hooks/stripe."
    await rig.result("memory_add", text=fact, scope=SHOP)
    tools = ["ruff", "mypy", "pytest", "eslint", "prettier", "tsc", "vitest", "stylelint",
             "hadolint", "shellcheck", "gitleaks", "trivy", "bandit", "semgrep", "black",
             "isort", "codespell", "markdownlint", "yamllint", "actionlint", "tflint",
             "sqlfluff", "buf", "golangci-lint", "cargo clippy", "rustfmt", "ktlint",
             "swiftlint", "pre-commit", "commitlint"]
    for tool in tools:
        await rig.result("memory_add", text=f"Always run {tool} before you push a branch.",
                         scope=SHOP)
    rules, _ = await rig.engine.reads.list_memories(
        _filters(type="procedural"), limit=50, offset=0)
    assert len(rules) == len(tools)
    start = (await rig.result("memory_context", project=SHOP))["text"]
    assert fact.rstrip(".") in start, start


async def test_conventions_said_in_chinese_are_shown_too(rig: Rig):
    said = ["提交之前一定要先跑 make lint。", "预发布环境的数据库是 Postgres 16，端口 5433。",
            "帮我看看这个报错？", "所有时间戳都以 UTC 存储。"]
    for content in said:
        await rig.result("memory_remember", session="s-wednesday", role="user",
                         content=content, scope=SHOP)
    await rig.engine.learning.drain()
    start = (await rig.result("memory_context", project=SHOP))["text"]
    for kept in (said[0], said[1], said[3]):
        assert kept.rstrip("。") in start, start
    assert "报错" not in start
