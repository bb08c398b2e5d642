"""Running git in the root: one way to call it, with memoryd's identity, no prompts,
and a deadline for the commands that talk to a remote.

A remote may be unreachable, slow or asking for a password nobody will type: git
is told never to prompt (`GIT_TERMINAL_PROMPT=0`, ssh in batch mode), HTTP transfers
slower than a trickle for half a minute give up, and a deadline kills the process
(trio kills what it started when a cancel scope runs out).

git runs at the background priority (`priority.background_child`): no reply waits on
a history commit, and the first one after a start stages the whole store (seconds of
a core at 200,000 memories) while searches want the cores.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

import trio

from memoryd import priority

GIT_ENV = {"GIT_AUTHOR_NAME": "memoryd", "GIT_AUTHOR_EMAIL": "memoryd@localhost",
           "GIT_COMMITTER_NAME": "memoryd", "GIT_COMMITTER_EMAIL": "memoryd@localhost",
           "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
# For commands that reach a remote: never a prompt, never a wait for a dead host.
_SSH = "ssh -o BatchMode=yes -o ConnectTimeout=15 -o ServerAliveInterval=15"
REMOTE_OPTIONS = ("-c", "http.lowSpeedLimit=1000", "-c", "http.lowSpeedTime=30",
                  "-c", "credential.interactive=false")
ZERO = "0" * 40


class GitError(Exception):
    pass


def remote_env() -> dict[str, str]:
    env = {"GIT_ASKPASS": "", "SSH_ASKPASS": ""}
    if "GIT_SSH_COMMAND" not in os.environ and "GIT_SSH" not in os.environ:
        env["GIT_SSH_COMMAND"] = _SSH
    return env


async def git(root: Path, *args: str, stdin: bytes = b"", env: dict[str, str] | None = None,
              timeout: float | None = None, index: Path | None = None) -> bytes:
    """git's stdout; GitError with its stderr when it fails or outlives `timeout`.
    `index`: a temporary index file instead of the repository's."""
    full = {**os.environ, **GIT_ENV, **(env or {})}
    if index is not None:
        full["GIT_INDEX_FILE"] = str(index)
    done: list[subprocess.CompletedProcess[bytes]] = []

    async def run(task_status: trio.TaskStatus[trio.Process] = trio.TASK_STATUS_IGNORED
                  ) -> None:
        done.append(await trio.run_process(["git", *args], cwd=root, env=full, stdin=stdin,
                                           capture_stdout=True, capture_stderr=True,
                                           check=False, task_status=task_status))

    failed: OSError | None = None
    with trio.move_on_after(timeout if timeout is not None else float("inf")) as scope:
        async with trio.open_nursery() as nursery:
            try:
                started = await nursery.start(run)
            except OSError as exc:  # raised here, not in the nursery's group
                failed = exc
            else:
                priority.background_child(started.pid)
    if failed is not None:
        raise GitError(f"cannot run git: {failed}")
    name = _command(args)
    if scope.cancelled_caught:
        raise GitError(f"git {name} gave no answer in {timeout:g} s and was stopped")
    proc = done[0]
    if proc.returncode != 0:
        raise GitError(f"git {name} failed ({proc.returncode}): "
                       f"{proc.stderr.decode(errors='replace').strip()[:300]}")
    return proc.stdout


def _command(args: tuple[str, ...]) -> str:
    """The git command of these arguments (past `-c key=value` options)."""
    for i, arg in enumerate(args):
        if not arg.startswith("-") and (i == 0 or args[i - 1] != "-c"):
            return arg
    return args[0] if args else "git"


async def head_of(root: Path) -> str | None:
    """The commit HEAD names, or None before the first commit."""
    try:
        return (await git(root, "rev-parse", "-q", "--verify", "HEAD^{commit}")).decode().strip()
    except GitError:
        return None


async def text(root: Path, *args: str, stdin: str = "") -> str:
    out = await git(root, *args, stdin=stdin.encode("utf-8", "surrogateescape"))
    return out.decode("utf-8", errors="replace")


async def blobs(root: Path, shas: Iterable[str]) -> dict[str, bytes]:
    """Each blob's bytes, read by one `cat-file --batch`."""
    wanted = sorted(set(shas) - {ZERO})
    if not wanted:
        return {}
    out = await git(root, "cat-file", "--batch", stdin="\n".join(wanted).encode() + b"\n")
    found: dict[str, bytes] = {}
    at = 0
    for sha in wanted:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        at = end + 1
        if len(header) != 3:  # `<sha> missing`
            continue
        size = int(header[2])
        found[sha] = out[at:at + size]
        at += size + 1
    return found


async def sizes(root: Path, shas: Iterable[str]) -> dict[str, int]:
    wanted = sorted(set(shas) - {ZERO})
    if not wanted:
        return {}
    out = await text(root, "cat-file", "--batch-check", stdin="\n".join(wanted) + "\n")
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3:
            found[parts[0]] = int(parts[2])
    return found
