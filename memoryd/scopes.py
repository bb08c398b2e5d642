"""Caller identity and scope rules.

A connection that names itself in `initialize` (clientInfo.name) is the agent
`agent:<name>`: it writes there by default and sees `global`, its own scope and
`user:*` scopes. A connection that does not name itself is the user's own
tooling (memoryctl, socat): it writes to `global` and may name any scope.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memoryd.errors import Forbidden
from memoryd.schema import GLOBAL_SCOPE

_NAME_CLEAN = re.compile(r"[^A-Za-z0-9._-]+")


def agent_scope(client_name: str) -> str | None:
    cleaned = _NAME_CLEAN.sub("-", client_name.strip()).strip("-._")[:64]
    return f"agent:{cleaned}" if cleaned else None


@dataclass
class Caller:
    agent: str | None = None  # "agent:<name>" once the connection named itself

    @property
    def default_scope(self) -> str:
        return self.agent or GLOBAL_SCOPE

    def can_see(self, scope: str) -> bool:
        if self.agent is None:
            return True
        return scope in (GLOBAL_SCOPE, self.agent) or scope.startswith("user:")

    def check(self, scope: str) -> None:
        if not self.can_see(scope):
            raise Forbidden(f"scope {scope!r} belongs to another agent; this connection is "
                            f"{self.agent!r} and may use 'global', its own scope and user:*")

    def visible_scopes(self, requested: str | None) -> list[str]:
        """Scopes that list/search look in: the requested one, else global + own."""
        if requested is not None:
            self.check(requested)
            return [requested]
        return [GLOBAL_SCOPE] if self.agent is None else [GLOBAL_SCOPE, self.agent]
