"""Caller identity and scope rules (README "Security model").

A connection that names itself in `initialize` (clientInfo.name) is the agent
`agent:<name>`. It writes to `global` unless a call names a scope or `initialize`
chose another default; it reads `global` plus its own scope, and may name a
`user:*` scope; other agents' scopes are forbidden, and so are the jobs. A
connection that does not name itself is the user's own tooling (memoryctl,
socat): it writes to `global`, reads every scope, and may run the jobs.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from memoryd.errors import Forbidden
from memoryd.schema import GLOBAL_SCOPE

_NAME_CLEAN = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_NAME = 64


def agent_scope(client_name: str) -> str:
    """`agent:<name>` for a clientInfo.name. Spaces become `-`; a name with any other
    character outside [A-Za-z0-9._-] (or none left) gets a hash of the full name, so
    "../../x" or "助手" never shares a scope with "x" or with the user's tooling."""
    name = client_name.strip()
    spaced = re.sub(r"\s+", "-", name)
    cleaned = _NAME_CLEAN.sub("-", spaced).strip("-._")
    if cleaned != spaced or not cleaned:
        digest = hashlib.blake2b(name.encode(), digest_size=4).hexdigest()
        cleaned = f"{cleaned[:_MAX_NAME - 9] or 'agent'}-{digest}"
    return f"agent:{cleaned[:_MAX_NAME]}"


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
        return scope in (GLOBAL_SCOPE, self.agent) or scope.startswith("user:")

    def check(self, scope: str) -> None:
        if not self.can_see(scope):
            raise Forbidden(f"scope {scope!r} belongs to another agent; this connection is "
                            f"{self.agent!r} and may use 'global', its own scope and user:*")

    def visible_scopes(self, requested: str | None) -> list[str] | None:
        """Scopes that list/search look in: the requested one; else global + own for an
        agent, every scope (None) for the user's tooling."""
        if requested is not None:
            self.check(requested)
            return [requested]
        return None if self.agent is None else [GLOBAL_SCOPE, self.agent]
