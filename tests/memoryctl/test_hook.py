"""`memoryctl hook` never holds up the agent: input it cannot read, an event it does not
handle, a daemon that accepts and never answers all end in exit 0 with nothing printed,
and a line in the hook log that says why (never the prompt)."""

from __future__ import annotations

import io
import json
import socket

import pytest

from memoryctl import agents, hook

CLAUDE = agents.AGENTS["claude-code"]


def _run(tmp_path, stdin: str, socket_path=None) -> tuple[int, str, str]:
    out = io.StringIO()
    code = hook.run(CLAUDE, io.StringIO(stdin), out, socket_path or tmp_path / "none.sock",
                    tmp_path / "root")
    log = (tmp_path / "root" / "logs" / "hooks.log").read_text()
    return code, out.getvalue(), log


@pytest.mark.parametrize(("stdin", "logged"), [
    ("not json", "unreadable event"), ("[1]", "not a JSON object"),
    ('{"hook_event_name": "PostToolUse"}', "is not one memoryd hooks"),
    ('{"hook_event_name": "Stop", "cwd": "/"}', "no transcript_path"),
    ('{"hook_event_name": "Stop", "cwd": "/", "transcript_path": "/"}',
     "is not a regular file: nothing stored"),
    ('{"hook_event_name": "UserPromptSubmit", "prompt": "  "}', "an empty prompt")])
def test_what_it_cannot_use_is_logged_not_failed(tmp_path, stdin, logged):
    code, printed, log = _run(tmp_path, stdin)
    assert (code, printed) == (0, "") and logged in log


def test_a_daemon_that_never_answers_is_given_up_on(tmp_path, monkeypatch):
    monkeypatch.setitem(agents.DEADLINES, "prompt", 0.3)
    path = tmp_path / "stalled.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(4)  # accepts into the backlog, never reads, never answers
    try:
        secret = "my prompt text mentions the launch codes"
        code, printed, log = _run(tmp_path, json.dumps(
            {"hook_event_name": "UserPromptSubmit", "prompt": secret, "cwd": str(tmp_path)}),
            path)
    finally:
        listener.close()
    assert (code, printed) == (0, "")
    assert "gave up waiting" in log or "ran out of time" in log
    assert secret not in log
