"""The remote end of a sync: fetch its branch, push ours. Never a force push, never a
rewrite of what was published: a push the remote refuses because it moved on is
answered by fetching and merging again (engine/remote.py).

The URL is given to git on each command and never written to `.git/config`, so a
token in it stays where the user put it (config.yaml); what memoryd logs and reports
shows it without its credentials.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from memoryd.config import BRANCH
from memoryd.history.runner import REMOTE_OPTIONS, GitError, git, remote_env

FETCHED = "refs/memoryd/remote"  # where the remote's branch is fetched to
DEFAULT_BRANCH = "main"  # what a remote with no HEAD to go by gets
PROBE = "memoryd-probe.git"  # under .git/: an empty remote cloned to read its HEAD
# A branch name a remote may give us (its HEAD's) that we then push to: the settings'
# own rule.
_BRANCH_NAME = re.compile(BRANCH)
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


async def default_branch(root: Path, url: str, timeout: float) -> str:
    """The branch a sync uses when the settings name none: the one the remote's HEAD
    names, which is what `git log` and `git clone` there show (a plain `git init
    --bare` names `master`, or `init.defaultBranch`). A remote that already has
    DEFAULT_BRANCH keeps it when its HEAD names a branch that does not exist (what
    memoryd pushed before it asked); an empty remote's HEAD is read by cloning it
    (nothing to copy), as git's own clone learns it."""
    try:
        out = (await git(root, *REMOTE_OPTIONS, "ls-remote", "--symref", "--", url,
                         env=remote_env(), timeout=timeout)).decode("utf-8", "replace")
    except GitError as exc:
        raise RemoteError(_reason(exc, url)) from None
    head: str | None = None
    heads: set[str] = set()
    for line in out.splitlines():
        value, _, ref = line.partition("\t")
        if value.startswith("ref: refs/heads/") and ref == "HEAD":
            head = value.removeprefix("ref: refs/heads/")
        elif ref.startswith("refs/heads/"):
            heads.add(ref.removeprefix("refs/heads/"))
    if head in heads and head is not None and _BRANCH_NAME.match(head):
        return head
    if heads:
        only = next(iter(heads)) if len(heads) == 1 else None
        if DEFAULT_BRANCH not in heads and only is not None and _BRANCH_NAME.match(only):
            return only
        return DEFAULT_BRANCH
    return await _unborn_head(root, url, timeout) or DEFAULT_BRANCH


async def _unborn_head(root: Path, url: str, timeout: float) -> str | None:
    """The branch an empty remote's HEAD names (git 2.31 and later tell a clone)."""
    probe = root / ".git" / PROBE
    shutil.rmtree(probe, ignore_errors=True)
    try:
        await git(root, *REMOTE_OPTIONS, "clone", "--bare", "--quiet", "--no-tags",
                  "--depth=1", "--", url, str(probe), env=remote_env(), timeout=timeout)
        named = (await git(probe, "symbolic-ref", "--quiet", "HEAD")).decode().strip()
    except GitError:
        return None
    finally:
        shutil.rmtree(probe, ignore_errors=True)
    branch = named.removeprefix("refs/heads/")
    return branch if named.startswith("refs/heads/") and _BRANCH_NAME.match(branch) else None
