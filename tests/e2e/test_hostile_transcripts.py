"""The probe's hostile transcripts, through the real hook command against a real daemon
whose sessions keep 10 turns: a Claude Code transcript of 40 turns with a line nested
past any parser's depth, a line over what a memory holds and a secret in a line; Stop
fired again and again (Claude Code fires it after every turn), and once with
`transcript_path: "/"`. Each turn is stored once, never again after it is evicted; the
bad lines fail alone; the secret never reaches disk; the daemon answers throughout."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.e2e.test_lifecycle import wait_for
from tests.e2e.test_secrets import GITHUB
from tests.engine.test_ingest import LONG_SESSION, claude_code_lines

SESSION = LONG_SESSION


def _transcript(path, turns: int) -> None:
    lines = claude_code_lines(turns)
    lines.insert(5, "[" * 100_000 + "]" * 100_000)  # nested past any parser's stack
    lines.insert(9, json.dumps({"type": "user", "sessionId": SESSION, "uuid": "huge",
                                "message": {"role": "user", "content": "x " * 200_000}}))
    lines.insert(12, json.dumps({"type": "user", "sessionId": SESSION, "uuid": "secret",
                                 "message": {"role": "user",
                                             "content": f"use {GITHUB}. for the CI"}}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def _stop(daemon, transcript: str, cwd) -> str:
    payload = {"hook_event_name": "Stop", "session_id": SESSION,
               "transcript_path": transcript, "cwd": str(cwd)}
    env = {**os.environ, "MEMORY_HOME": str(daemon.root)}
    done = subprocess.run([sys.executable, "-m", "memoryctl", "hook", "claude-code"],
                          input=json.dumps(payload), capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0 and done.stdout == "", done.stderr
    return (daemon.root / "logs" / "hooks.log").read_text()


def test_hostile_transcript_lines_fail_alone_and_no_line_is_stored_twice(make_daemon,
                                                                         tmp_path):
    d = make_daemon(config="conversation:\n  max_entries: 10\n").start()
    transcript = tmp_path / "home" / ".claude" / "projects" / "-tmp-shop" / f"{SESSION}.jsonl"
    _transcript(transcript, 40)
    log = _stop(d, str(transcript), tmp_path)
    assert "stored 41 turns" in log, log[-500:]  # 40 and the secret's; 2 lines failed
    wait_for(lambda: d.call("stats")["backlog"] == 0, timeout=120, what="the turns settled")
    for _ in range(3):
        log = _stop(d, str(transcript), tmp_path)
        assert log.rstrip().splitlines()[-1].count("stored 0 turns") == 1, log[-500:]
    live = d.call("memory_list", {"source": "ingest:claude-code", "limit": 100})
    assert live["total"] <= 10  # the rest evicted to the trash, and not stored again
    before = d.call("stats")["memories"]
    _stop(d, "/", tmp_path)  # the whole file system: nothing
    assert "is not a regular file: nothing stored" in (
        d.root / "logs" / "hooks.log").read_text().splitlines()[-1]
    assert d.call("stats")["memories"] == before
    on_disk = b"".join(p.read_bytes() for p in d.root.rglob("*")
                       if p.is_file() and not p.is_symlink() and ".git" not in p.parts)
    assert GITHUB.encode() not in on_disk
    assert d.stop() == 0
