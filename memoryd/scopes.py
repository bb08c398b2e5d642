"""Caller identity and scope rules (docs/security.md).

A connection that names itself in `initialize` (clientInfo.name) is the agent
`agent:<name>`. It writes to `global` unless a call names a scope or `initialize`
chose another default; it reads `global` plus its own scope, and may name a
`user:*` or a `project:*` scope (a repository's memory is shared by every agent that
works in it); other agents' scopes are forbidden, and so are the jobs. A
connection that does not name itself is the user's own tooling (memoryctl,
socat): it writes to `global`, reads every scope, and may run the jobs.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from memoryd.errors import Forbidden, InvalidParams
from memoryd.schema import GLOBAL_SCOPE

_NAME_CLEAN = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_NAME = 64
_OWN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")  # a name that is its own scope


def is_project(scope: str) -> bool:
    """A project's scope: its memory is the team's ("we" is the team, its rules are
    how to work there)."""
    return scope.startswith("project:")


def agent_scope(client_name: str) -> str:
    """`agent:<name>` for a clientInfo.name, one to one. A name of [A-Za-z0-9._-]
    (starting with a letter or digit, at most 64) is its own scope; any other (`my
    agent`, `../../x`, `助手`, a name over 64 characters) is cleaned for reading and
    gets a hash of the whole name: `my agent` never shares a scope with `my-agent`,
    nor two long names with their first 64 characters, nor any name with the user's
    tooling."""
    if _OWN_NAME.fullmatch(client_name):
        return f"agent:{client_name}"
    return f"agent:{_hashed(_cleaned(client_name.strip()), client_name)}"


def earlier_agent_scope(client_name: str) -> str:
    """The scope a name had before names mapped one to one (spaces became `-`, long
    names were cut at 64): where that agent's memories were written until then."""
    name = client_name.strip()
    cleaned = _cleaned(name)
    if cleaned != re.sub(r"\s+", "-", name) or not cleaned:
        cleaned = _hashed(cleaned, name)
    return f"agent:{cleaned[:_MAX_NAME]}"


def _cleaned(name: str) -> str:
    """A name in [A-Za-z0-9._-]: spaces and every other character become `-`."""
    return _NAME_CLEAN.sub("-", re.sub(r"\s+", "-", name)).strip("-._")


def _hashed(cleaned: str, name: str) -> str:
    """`cleaned` (cut to leave room) with a hash of the whole `name` it came from."""
    digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()
    return f"{cleaned[:_MAX_NAME - 9] or 'agent'}-{digest}"


@dataclass
class Caller:
    agent: str | None = None  # "agent:<name>" once the connection named itself
    default_scope: str = GLOBAL_SCOPE  # where a write goes unless it names a scope

    @property
    def is_user(self) -> bool:
        """The user's own unnamed tooling: every scope, and the jobs."""
        return self.agent is None

    def can_see(self, scope: str) -> bool:
        if self.agent is None:
            return True
        return scope in (GLOBAL_SCOPE, self.agent) or scope.startswith(("user:", "project:"))

    def check(self, scope: str) -> None:
        if not self.can_see(scope):
            raise Forbidden(f"scope {scope!r} belongs to another agent; this connection is "
                            f"{self.agent!r} and may use 'global', its own scope, user:* "
                            "and project:*")

    def visible_scopes(self, requested: str | None,
                       project: str | None = None) -> list[str] | None:
        """Scopes that list/search look in: the requested one; a project's with global
        (recall from inside the project); else global + own for an agent, every scope
        (None) for the user's tooling."""
        if project is not None:
            if requested is not None:
                raise InvalidParams("project", "give `scope` or `project`, not both")
            self.check(project)
            return [project, GLOBAL_SCOPE]
        if requested is not None:
            self.check(requested)
            return [requested]
        return None if self.agent is None else [GLOBAL_SCOPE, self.agent]


def may_link(a: str, b: str) -> bool:
    """Whether memories of scopes `a` and `b` may link to each other by a name written
    in one of them: an agent's scope is its own, so a link into or out of it stays
    inside it (a link is kept at both ends, and each end names the other's id)."""
    return a == b or not (a.startswith("agent:") or b.startswith("agent:"))
