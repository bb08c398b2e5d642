"""Which project a folder belongs to: its repository's remote, else the repository's
root, as one scope `project:<name>-<id>` that every clone and worktree of it shares.

The remote (`origin`, else the first remote by name) is normalised so that the ways of
writing one repository agree: `git@github.com:a/b.git`, `ssh://git@github.com/a/b`,
`https://user:token@GitHub.com/a/b/` are all `github.com/a/b` (no user, password, port
of the default, `.git` or trailing slash; the host in lower case, and the path too on
hosts whose names ignore case: GitHub, GitLab, Bitbucket, Codeberg). Without a remote,
the repository is its main work tree's path (git's common directory, so a worktree is
its repository); outside a repository, the folder itself. The name is readable (the
repository's last path part), the id stable (a hash of the identity): two repositories
called `app` stay apart.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

SCOPE_PREFIX = "project:"
_SCP = re.compile(r"^(?:(?P<user>[^@/]+)@)?(?P<host>[^:/]+):(?P<path>(?!//).+)$")
_NAME_CLEAN = re.compile(r"[^A-Za-z0-9._-]+")
_DEFAULT_PORTS = {"22", "80", "443", "9418"}
# Hosts whose owner and repository names ignore case (a link to either spelling opens
# the same repository).
_NAMES_IGNORE_CASE = frozenset({"github.com", "gitlab.com", "bitbucket.org", "codeberg.org"})
GIT_TIMEOUT = 2.0  # seconds: a hook must not wait on a hung file system


@dataclass(frozen=True)
class Project:
    scope: str  # project:<name>-<id>
    identity: str  # the normalised remote, or the repository's path
    root: Path | None  # the work tree's top folder (None: not in a repository)


def normalise_remote(url: str) -> str:
    """One spelling of a remote URL: `host/path` without credentials, default port,
    `.git` or trailing slashes; a local path stays a path."""
    url = url.strip()
    scp = _SCP.match(url) if "://" not in url else None
    if scp is not None and not re.match(r"^[A-Za-z]:[\\/]", url):  # not C:\repo
        host, path = scp.group("host"), scp.group("path")
    elif "://" in url:
        parts = urlsplit(url)
        if parts.scheme == "file":
            return _trimmed(parts.path)
        host = (parts.hostname or "")
        if parts.port is not None and str(parts.port) not in _DEFAULT_PORTS:
            host = f"{host}:{parts.port}"
        path = parts.path
    else:
        return _trimmed(url)
    host = host.lower()
    path = _trimmed(path).lstrip("/")
    if host in _NAMES_IGNORE_CASE:  # github.com/ACME/Shop is github.com/acme/shop
        path = path.lower()
    return f"{host}/{path}"


def _trimmed(path: str) -> str:
    path = path.rstrip("/")
    return path[:-4] if path.endswith(".git") else path


def scope_for(identity: str) -> str:
    """`project:<name>-<id>`: the identity's last part, cleaned, and 8 hex of its hash."""
    last = identity.rstrip("/").rsplit("/", 1)[-1]
    name = _NAME_CLEAN.sub("-", last).strip("-._")[:40] or "project"
    digest = hashlib.blake2b(identity.encode("utf-8", "surrogateescape"),
                             digest_size=4).hexdigest()
    return f"{SCOPE_PREFIX}{name}-{digest}"


def of_folder(folder: str | Path) -> Project:
    """The project `folder` belongs to (git is asked; without git, the folder)."""
    where = Path(folder).expanduser().resolve()
    facts = _git(where, "rev-parse", "--path-format=absolute", "--show-toplevel",
                 "--git-common-dir")
    if facts is None or len(facts.splitlines()) < 2:
        return Project(scope_for(str(where)), str(where), None)
    top, common = (Path(line) for line in facts.splitlines()[:2])
    # NUL-separated (`key\nvalue\0`): a URL holding a line break cannot pass for another
    # remote's line; one holding any control character is no remote's, and is not used.
    remotes = _git(where, "config", "-z", "--get-regexp", r"^remote\..*\.url$") or ""
    urls = {key: value for key, _, value in (entry.partition("\n")
                                             for entry in remotes.split("\0") if entry)
            if value and not any(ord(c) < 32 or c == "\x7f" for c in value)}
    url = urls.get("remote.origin.url") or next((urls[k] for k in sorted(urls)), None)
    if url:
        identity = normalise_remote(url)
    else:  # the main work tree: `<main>/.git` is the common folder of every worktree
        identity = str(common.parent if common.name == ".git" else common)
    return Project(scope_for(identity), identity, top)


def _git(where: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(where), *args], capture_output=True,
                              text=True, timeout=GIT_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None
