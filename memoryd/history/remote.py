"""The remote end of a sync: fetch its branch, push ours. Never a force push, never a
rewrite of what was published: a push the remote refuses because it moved on is
answered by fetching and merging again (engine/remote.py).

The URL is given to git on each command and never written to `.git/config`, so a
token in it stays where the user put it (config.yaml); what memoryd logs and reports
shows it without its credentials.
"""

from __future__ import annotations

import re
from pathlib import Path

from memoryd.history.runner import REMOTE_OPTIONS, GitError, git, remote_env

FETCHED = "refs/memoryd/remote"  # where the remote's branch is fetched to
_CREDENTIALS = re.compile(r"(?<=://)[^/@\s]+@")
_NO_BRANCH = ("couldn't find remote ref", "could not find remote ref")
# Refused because the branch moved: before the push (a fast-forward check) or during it
# (another push updated the ref first: its lock, or its old value, did not hold).
_MOVED = ("[rejected]", "non-fast-forward", "fetch first", "stale info",
          "failed to update ref", "cannot lock ref", "incorrect old value")


class RemoteError(Exception):
    """The remote could not be reached, refused us, or took too long."""


def shown(url: str) -> str:
    """The URL without a user name or password (`https://x:token@host` -> `https://host`)."""
    return _CREDENTIALS.sub("", url)


def _reason(exc: GitError, url: str) -> str:
    return shown(str(exc).replace(url, shown(url)))


async def fetch(root: Path, url: str, branch: str, timeout: float) -> str | None:
    """The remote branch's head, fetched; None when the remote has no such branch yet."""
    try:
        await git(root, *REMOTE_OPTIONS, "fetch", "--quiet", "--no-tags",
                  "--no-write-fetch-head", url, f"+refs/heads/{branch}:{FETCHED}",
                  env=remote_env(), timeout=timeout)
    except GitError as exc:
        if any(s in str(exc) for s in _NO_BRANCH):
            return None
        raise RemoteError(_reason(exc, url)) from None
    return (await git(root, "rev-parse", "--verify", f"{FETCHED}^{{commit}}")).decode().strip()


async def remote_head(root: Path, url: str, branch: str, timeout: float) -> str | None:
    """The remote branch's head as the remote names it, nothing fetched; None when it
    has no such branch."""
    try:
        out = await git(root, *REMOTE_OPTIONS, "ls-remote", "--", url, f"refs/heads/{branch}",
                        env=remote_env(), timeout=timeout)
    except GitError as exc:
        raise RemoteError(_reason(exc, url)) from None
    return out.decode().split()[0] if out.strip() else None


async def push(root: Path, url: str, branch: str, commit: str, timeout: float) -> bool:
    """Push `commit` as the remote branch; False when the remote moved on (fetch, merge
    and push again), RemoteError for anything else."""
    try:
        await git(root, *REMOTE_OPTIONS, "push", "--quiet", "--porcelain", url,
                  f"{commit}:refs/heads/{branch}", env=remote_env(), timeout=timeout)
    except GitError as exc:
        if any(s in str(exc) for s in _MOVED):
            return False
        raise RemoteError(_reason(exc, url)) from None
    return True
