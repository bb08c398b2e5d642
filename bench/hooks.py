"""Coding-agent hook latency: the installed hook command run as an agent runs it (a new
process each time, the event on stdin), start to exit, against a real daemon holding
LoCoMo turns in a project's scope and in global; and without a daemon. Also memoryctl's
cold start alone (`memoryctl --version`) and Python's (`python -c pass`).

    python bench/hooks.py [--runs 100] [--turns 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.protocol import pct, start_daemon
from bench.remember import LOCOMO, params, turns_of
from memoryctl.agents import AGENTS
from memoryctl.hook_settings import command
from memoryctl.project import of_folder
from memoryd_client import Client


def timed(cmd: list[str] | str, runs: int, stdin: str = "", env: dict | None = None,
          shell: bool = False) -> tuple[list[float], str]:
    """Milliseconds of each run, start to exit; the last run's stdout."""
    times, out = [], ""
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env,
                              shell=shell, check=True)
        times.append((time.perf_counter() - started) * 1000)
        out = done.stdout
    return times, out


def show(what: str, times: list[float]) -> None:
    print(f"{what}: p50 {pct(times, 50):.0f} ms, p99 {pct(times, 99):.0f} ms "
          f"({len(times)} runs)", flush=True)


def stop_hooks(hook: str, env: dict, prompt: dict, tmp: Path, data: list, runs: int) -> None:
    """A Claude Code transcript of a long session (tool output between the turns, as
    there is), stored whole by the first Stop, then a turn more before each Stop."""
    said = [t for t in turns_of(data[-1])]
    path = tmp / "claude/projects/-shop/s1.jsonl"
    path.parent.mkdir(parents=True)
    noise = json.dumps({"type": "user", "uuid": "tool", "sessionId": "s1", "message": {
        "role": "user", "content": [{"type": "tool_result", "content": "x" * 20000}]}})

    def line(n: int) -> str:
        turn = said[n % len(said)]
        role = "user" if n % 2 == 0 else "assistant"
        return json.dumps({"type": role, "uuid": f"u{n}", "sessionId": "s1", "message": {
            "role": role, "content": turn["content"]}}) + "\n" + noise + "\n"

    first = 400
    path.write_text("".join(line(n) for n in range(first)))
    stop = {**prompt, "hook_event_name": "Stop", "transcript_path": str(path),
            "stop_hook_active": False}
    times, _ = timed(hook, 1, json.dumps(stop), env, shell=True)
    size = path.stat().st_size / 1e6
    print(f"Stop hook, first of a {first}-turn transcript ({size:.1f} MB): "
          f"{times[0]:.0f} ms", flush=True)
    times = []
    for n in range(first, first + min(runs, 50)):
        with path.open("a") as out:
            out.write(line(n))
        times += timed(hook, 1, json.dumps(stop), env, shell=True)[0]
    show(f"Stop hook, one new turn each ({path.stat().st_size / 1e6:.1f} MB transcript)",
         times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--turns", type=int, default=2000)
    args = ap.parse_args()
    python = [sys.executable, "-c", "pass"]
    show("python -c pass", timed(python, args.runs)[0])
    show("memoryctl --version", timed([sys.executable, "-m", "memoryctl", "--version"],
                                      args.runs)[0])
    with tempfile.TemporaryDirectory(prefix="hooks-") as tmp:
        root = Path(tmp) / "root"
        repo = Path(tmp) / "shop"
        repo.mkdir()
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        subprocess.run(["git", "-C", str(repo), "remote", "add", "origin",
                        "git@github.com:acme/shop.git"], check=True)
        hook = command(AGENTS["claude-code"], str(root))
        env = {**os.environ, "MEMORY_HOME": str(root)}
        prompt = {"session_id": "s", "transcript_path": "", "cwd": str(repo),
                  "hook_event_name": "UserPromptSubmit", "permission_mode": "default",
                  "prompt": "When did Caroline go to the LGBTQ support group?"}
        start = {**prompt, "hook_event_name": "SessionStart", "source": "startup"}
        times, _ = timed(hook, args.runs, json.dumps(prompt), env, shell=True)
        show("UserPromptSubmit hook, no daemon", times)
        proc = start_daemon(root)
        try:
            data = json.loads(LOCOMO.read_text())
            scope = of_folder(repo).scope  # every other conversation is the project's
            turns = [(t, scope if n % 2 else "global") for n, conv in enumerate(data)
                     for t in turns_of(conv)][: args.turns]
            with Client(root / "memory.sock", timeout=600) as client:
                for turn, where in turns:
                    client.call("memory_remember", {**params(turn), "scope": where})
                while client.call("stats")["backlog"]:
                    time.sleep(0.5)
                held = client.call("stats")["memories"]
            times, out = timed(hook, args.runs, json.dumps(prompt), env, shell=True)
            shown = json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""
            show(f"UserPromptSubmit hook, {held} memories ({len(shown)} characters "
                 "printed)", times)
            times, out = timed(hook, args.runs, json.dumps(start), env, shell=True)
            show("SessionStart hook", times)
            stop_hooks(hook, env, prompt, Path(tmp), data, args.runs)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)


if __name__ == "__main__":
    main()
