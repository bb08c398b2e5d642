"""Coding agents' hooks end to end, per agent: `memoryctl hooks install` into the
agent's settings (in a home folder of the test's), then the recorded inputs of each of
the agent's events replayed through the very command the settings hold, against a
real daemon, in two worktrees of one repository: the transcript's turns land once
however often the hooks fire, and a session started in the other worktree is shown
what was learned in the first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memoryctl.agents import AGENTS
from tests.e2e.test_lifecycle import wait_for

pytestmark = pytest.mark.skipif(subprocess.run(["git", "--version"], capture_output=True)
                                .returncode != 0, reason="no git binary on this machine")

INPUTS = Path(__file__).parents[1] / "memoryctl" / "hook_inputs"
SESSION = "5d2a7c1e-8b4f-4e6a-9c3d-1f2e3a4b5c6d"
NEXT = "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"  # the next session, in the other worktree
USER_SAYS = ("I always run make check before committing. Our staging database is "
             "Postgres 16 on db-staging.")
ASSISTANT_SAYS = "Understood: make check first, and staging runs Postgres 16."


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True,
                          check=True, env={**os.environ, "GIT_AUTHOR_NAME": "t",
                                           "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
                                           "GIT_COMMITTER_EMAIL": "t@x"}).stdout


def repository(tmp_path: Path) -> tuple[Path, Path]:
    """A repository with a remote and a second worktree of it."""
    main = tmp_path / "shop"
    main.mkdir()
    git(main, "init", "-q", "-b", "main")
    git(main, "remote", "add", "origin", "git@github.com:acme/shop.git")
    (main / "README.md").write_text("shop\n")
    git(main, "add", ".")
    git(main, "commit", "-qm", "init")
    other = tmp_path / "shop-fix"
    git(main, "worktree", "add", "-q", str(other), "-b", "fix")
    return main, other


def transcript(agent: str, home: Path, turns: list[tuple[str, str]]) -> Path:
    """The agent's own transcript of the session, in its own format and place."""
    if agent == "claude-code":
        path = home / ".claude/projects/-tmp-shop" / f"{SESSION}.jsonl"
        lines = [{"type": role, "uuid": f"u{n}", "sessionId": SESSION, "cwd": "/tmp/shop",
                  "timestamp": f"2026-11-26T09:0{n}:00Z",
                  "message": {"role": role, "content": text if role == "user" else [
                      {"type": "thinking", "thinking": "hm"}, {"type": "text", "text": text}]}}
                 for n, (role, text) in enumerate(turns)]
    elif agent == "codex":
        path = home / f".codex/sessions/2026/11/26/rollout-2026-11-26T09-00-00-{SESSION}.jsonl"
        lines = [{"timestamp": "2026-11-26T09:00:00Z", "type": "session_meta",
                  "payload": {"id": SESSION, "cwd": "/tmp/shop"}}]
        lines += [{"timestamp": f"2026-11-26T09:0{n}:00Z", "type": "response_item",
                   "payload": {"type": "message", "role": role, "content": [
                       {"type": "input_text" if role == "user" else "output_text",
                        "text": text}]}} for n, (role, text) in enumerate(turns)]
    else:
        path = home / ".gemini/tmp/3b9e0c/chats/session-2026-11-26T09-00-5d2a7c1e.jsonl"
        lines = [{"sessionId": SESSION, "projectHash": "3b9e0c",
                  "startTime": "2026-11-26T09:00:00Z"}]
        lines += [{"id": f"m{n}", "timestamp": f"2026-11-26T09:0{n}:00Z",
                   "type": "user" if role == "user" else "gemini", "content": text}
                  for n, (role, text) in enumerate(turns)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def fire(settings: dict, event: str, payload: dict, env: dict) -> dict | None:
    """Run the command the settings hold for `event` as the agent does (a shell, the
    event on stdin); its JSON output, if any."""
    (group,) = settings["hooks"][event][-1:]
    (hook,) = group["hooks"]
    done = subprocess.run(hook["command"], shell=True, input=json.dumps(payload),
                          capture_output=True, text=True, env=env, timeout=90)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


@pytest.mark.parametrize("name", list(AGENTS))
def test_an_agents_hooks_remember_a_session_and_tell_the_next_one(name, daemon, tmp_path):
    agent = AGENTS[name]
    home = tmp_path / "home"
    settings_file = home / agent.settings
    settings_file.parent.mkdir(parents=True)
    first = next(iter(agent.events))
    theirs = {"model": "their-choice", "hooks": {
        first: [{"hooks": [{"type": "command", "command": "echo theirs"}]}]}}
    settings_file.write_text(json.dumps(theirs))
    env = {**os.environ, "HOME": str(home), "MEMORY_HOME": str(daemon.root)}
    for _ in range(2):  # a second install replaces, never doubles
        subprocess.run([sys.executable, "-m", "memoryctl", "hooks", "install", name, "--root",
                        str(daemon.root)], env=env, check=True, capture_output=True)
    settings = json.loads(settings_file.read_text())
    assert settings["model"] == "their-choice"
    assert settings["hooks"][first][0]["hooks"][0]["command"] == "echo theirs"
    assert all(sum("memoryctl" in h["command"] for g in settings["hooks"][e] for h in g["hooks"])
               == 1 for e in agent.events)

    main, other = repository(tmp_path)
    recorded = json.loads((INPUTS / f"{name}.json").read_text())
    file = transcript(name, home, [("user", USER_SAYS)])

    def event(kind: str, cwd: Path, prompt: str = "", session: str = SESSION) -> dict:
        (event_name,) = [e for e, a in agent.events.items() if a == kind][:1]
        text = json.dumps(recorded[event_name]).replace("{session}", session).replace(
            "{transcript}", str(file)).replace("{cwd}", str(cwd)).replace("{prompt}", prompt)
        return {"name": event_name, "payload": json.loads(text)}

    start = event("start", main)
    assert fire(settings, start["name"], start["payload"], env) is None  # nothing known yet
    file = transcript(name, home, [("user", USER_SAYS), ("assistant", ASSISTANT_SAYS)])
    for store_event in [e for e, a in agent.events.items() if a == "store"]:
        for _ in range(2):  # every store event, twice: each turn lands once
            payload = {**event("store", main)["payload"], "hook_event_name": store_event}
            assert fire(settings, store_event, payload, env) is None
    with daemon.client() as c:
        turns = c.call("memory_list", {"source": f"ingest:{agent.source}"})["memories"]
        assert sorted(t["role"] for t in turns) == ["assistant", "user"]
        (scope,) = {t["scope"] for t in turns}
        assert scope.startswith("project:shop-")
    wait_for(lambda: daemon.call("stats")["backlog"] == 0, timeout=120, what="facts learned")

    started = event("start", other, session=NEXT)  # the other worktree: the same project
    shown = fire(settings, started["name"], started["payload"], env)
    assert shown is not None
    context = shown["hookSpecificOutput"]
    assert context["hookEventName"] == started["name"]
    assert "make check" in context["additionalContext"]
    asked = event("prompt", other, "which database does staging use?", session=NEXT)
    recalled = fire(settings, asked["name"], asked["payload"], env)
    assert recalled is not None and "Postgres 16" in recalled[
        "hookSpecificOutput"]["additionalContext"]
    # the session that said it is not shown its own turns back (the agent has them)
    again = event("prompt", main, "which database does staging use?")
    echoed = fire(settings, again["name"], again["payload"], env)
    assert echoed is None or USER_SAYS not in echoed["hookSpecificOutput"][
        "additionalContext"]

    subprocess.run([sys.executable, "-m", "memoryctl", "hooks", "uninstall", name], env=env,
                   check=True, capture_output=True)
    assert settings_file.read_text() == json.dumps(theirs)  # byte for byte
    log = (daemon.root / "logs" / "hooks.log").read_text()
    assert f"{name} {started['name']}" in log and USER_SAYS not in log


def test_context_file_projects_and_listing_a_project(daemon, tmp_path):
    """For an agent without hooks: the project's block kept in its context file between
    markers; `projects` and `list --project` show what a project holds."""
    main, other = repository(tmp_path)
    env = {**os.environ, "MEMORY_HOME": str(daemon.root)}

    def ctl(*args: str, cwd: Path = main) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "memoryctl", *args], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=60, check=True)

    scope = json.loads(ctl("--json", "projects").stdout)["here"]["scope"]
    assert scope.startswith("project:shop-")
    daemon.call("memory_write", {"content": "Releases are cut from the main branch only.",
                                 "category": "decisions", "scope": scope})
    daemon.call("memory_write", {"content": "Commit messages are written in English.",
                                 "category": "decisions"})
    agents_md = other / "AGENTS.md"
    agents_md.write_text("# Shop\n\nOur own notes stay.\n")
    assert "updated" in ctl("context", "--write", cwd=other).stdout
    text = agents_md.read_text()
    assert text.startswith("# Shop\n\nOur own notes stay.\n\n<!-- memoryd:begin")
    assert "cut from the main branch" in text and text.rstrip().endswith("<!-- memoryd:end -->")
    assert "already up to date" in ctl("context", "--write", cwd=other).stdout
    assert "updated" in ctl("context", "--write", "--scope", "global", cwd=other).stdout
    assert "English" in agents_md.read_text() and "main branch" not in agents_md.read_text()
    listed = json.loads(ctl("--json", "list", "--project", str(other)).stdout)
    assert [m["content"][:8] for m in listed["memories"]] == ["Releases"]
    shown = ctl("projects", cwd=other).stdout
    assert scope in shown and "<- this folder" in shown and "github.com/acme/shop" in shown


def test_a_hook_without_a_daemon_says_nothing_and_exits_0(tmp_path):
    root = tmp_path / "nothing-here"
    payload = {"session_id": "s", "transcript_path": "", "cwd": str(tmp_path),
               "hook_event_name": "UserPromptSubmit", "prompt": "what did we decide?"}
    done = subprocess.run([sys.executable, "-m", "memoryctl", "hook", "claude-code",
                           "--root", str(root)], input=json.dumps(payload),
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "")
    log = (root / "logs" / "hooks.log").read_text()
    assert "UserPromptSubmit" in log and "no daemon answers" in log
