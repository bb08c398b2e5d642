"""`memoryctl hook <agent>`: what runs when a coding agent fires one of memoryd's hooks.

It reads the event's JSON on stdin and, by the event (agents.py says which does what),
prints the project's `<memory>` block, prints the recall block for the prompt, or hands
the session's transcript to the daemon. Whatever happens (no daemon, a daemon still
starting, a slow answer, input it cannot read) it never holds up the agent: it stays
within its own deadline, prints nothing but the context, exits 0, and says why in
`<root>/logs/hooks.log` (one line per run; never the prompt's text).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from memoryctl import project
from memoryctl.agents import BUDGETS, DEADLINES, Action, Agent
from memoryd_client import Client, DaemonUnavailable, RpcFailure
from memoryd_client.wire import INVALID_PARAMS

MAX_INPUT = 4 * 1024 * 1024  # bytes of the event read at most (a prompt can be long)
MAX_QUERY = 4096  # characters of a prompt recall searches with (the tool's limit)
LOG_LIMIT = 1024 * 1024  # bytes of hooks.log; past it the older half goes


class _Late(Exception):
    """The hook's own deadline passed (a hung file system, a stalled socket)."""


def _late(signum: int, frame: object) -> None:
    raise _Late


def run(agent: Agent, stdin: TextIO, stdout: TextIO, socket_path: Path, root: Path) -> int:
    started = time.monotonic()
    event, outcome = "?", "nothing to do"
    # Whatever blocks (a hung file system, a daemon that answers a byte at a time), the
    # hook ends a second after its deadline (agents.py: well inside the agent's timeout);
    # reading the event has the shortest one.
    signal.signal(signal.SIGALRM, _late)
    signal.setitimer(signal.ITIMER_REAL, min(DEADLINES.values()) + 1)
    try:
        payload = json.loads(stdin.read(MAX_INPUT) or "null")
        if not isinstance(payload, dict):
            raise ValueError("the event is not a JSON object")
        event = str(payload.get("hook_event_name") or "?")
        action = agent.events.get(event)
        if action is None:
            outcome = f"{agent.title} event {event!r} is not one memoryd hooks"
        else:
            outcome = _act(agent, action, event, payload, stdout, socket_path)
    except _Late:
        outcome = "ran out of time"
    except DaemonUnavailable:
        outcome = f"no daemon answers on {socket_path}"
    except RpcFailure as exc:
        outcome = f"the daemon refused: {exc.message} (error {exc.code})"
    except (TimeoutError, OSError) as exc:
        outcome = f"gave up waiting: {exc}"
    except (ValueError, UnicodeDecodeError) as exc:
        outcome = f"unreadable event: {str(exc)[:200]}"
    except Exception as exc:  # a hook must never fail the agent
        outcome = f"failed: {type(exc).__name__}: {str(exc)[:200]}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    _log(root, agent, event, outcome, time.monotonic() - started)
    return 0


def _act(agent: Agent, action: Action, event: str, payload: dict[str, Any],
         stdout: TextIO, socket_path: Path) -> str:
    deadline = DEADLINES[action]
    signal.setitimer(signal.ITIMER_REAL, deadline + 1)
    cwd = payload.get("cwd")
    where = project.of_folder(cwd if isinstance(cwd, str) and cwd else os.getcwd())
    if action == "store":
        transcript = payload.get("transcript_path")
        if not isinstance(transcript, str) or not transcript:
            return "no transcript_path in the event"
        # A hook stores its own session's transcript, one file: a folder ("/" walks the
        # whole file system) would store every transcript under it into this project.
        if not os.path.isfile(transcript) or os.path.islink(transcript):
            return f"transcript_path {transcript[:200]!r} is not a regular file: nothing stored"
        with _client(socket_path, deadline) as client:
            result = client.call("memory_ingest", {"source": agent.source, "path": transcript,
                                                   "scope": where.scope})
        report = result["reports"][0]
        return (f"stored {report['added']} turns to {where.scope} ({report['unchanged']} "
                f"known, {sum(g['count'] for g in report['skipped'])} skipped)")
    if action == "prompt":
        prompt = payload.get("prompt")
        if not isinstance(prompt, str) or not prompt.split():
            return "an empty prompt"
        params = {"query": prompt[:MAX_QUERY], "project": where.scope, "tail": 0,
                  "token_budget": BUDGETS[action], "procedural": False}
        session = payload.get("session_id")
        if isinstance(session, str) and session:
            # The session asking: its own turns are not shown back to it (the agent has
            # them), as the stored transcript names them.
            params["session"] = session
        method = "memory_recall"
    else:
        params = {"project": where.scope, "token_budget": BUDGETS[action]}
        method = "memory_context"
    with _client(socket_path, deadline) as client:
        try:
            text = client.call(method, params)["text"]
        except RpcFailure as exc:
            if exc.code != INVALID_PARAMS or not isinstance(exc.data, dict) or (
                    exc.data.get("field") != "session"):
                raise
            # a session id the daemon does not take as a name: ask without it
            text = client.call(method, {k: v for k, v in params.items()
                                        if k != "session"})["text"]
    if not text:
        return f"nothing relevant in {where.scope}"
    stdout.write(json.dumps({"hookSpecificOutput": {"hookEventName": event,
                                                    "additionalContext": text}},
                            ensure_ascii=False))
    stdout.flush()
    return f"printed {len(text)} characters from {where.scope}"


def _client(socket_path: Path, deadline: float) -> Client:
    """A connection that fails at once when nothing listens or the daemon is still
    starting, and gives up on an answer after `deadline` seconds."""
    return Client(socket_path, timeout=deadline, retries=0, start_wait=0)


def _log(root: Path, agent: Agent, event: str, outcome: str, seconds: float) -> None:
    line = (f"{datetime.now(UTC).isoformat(timespec='seconds')} {agent.name} {event} "
            f"{seconds * 1000:.0f}ms {outcome}\n")
    try:
        logs = root / "logs"
        logs.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = logs / "hooks.log"
        if path.exists() and path.stat().st_size > LOG_LIMIT:
            kept = path.read_bytes()[-LOG_LIMIT // 2:]
            path.write_bytes(kept[kept.find(b"\n") + 1:])
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as out:
            out.write(line)
    except OSError as exc:  # the log is a courtesy: a hook still exits 0
        print(f"memoryctl hook: cannot write the hook log: {exc}", file=sys.stderr)
