"""What the dispatcher routes a call to: a tool's description and its handlers. The
tools package fills them in (tools/registry.py binds each spec of its table to its
handler); the protocol knows no tool of its own."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec

from memoryd.scopes import Caller


class ToolDescription(Protocol):
    """What the dispatcher reads of a tool's spec."""

    @property
    def name(self) -> str: ...

    @property
    def params(self) -> type: ...

    @property
    def progress(self) -> bool: ...  # sends notifications/progress given a token

    def describe(self) -> dict[str, Any]: ...  # its `tools/list` entry


@dataclass(frozen=True)
class Tool:
    spec: ToolDescription
    fn: Callable[..., Awaitable[msgspec.Struct]]  # (caller, params[, progress=]) -> result
    # Many calls at once: a result or an RpcError per call, in order (group commit),
    # each call's params with what `prepare` made for it (None where it did not run).
    batch: Callable[[Caller, list[Any], list[Any]], Awaitable[list[Any]]] | None = None
    # Calls received but not yet run: work that can start early, one result a call (or
    # None), carried to the batch that runs them; a batch without it does it all.
    prepare: Callable[[Caller, list[Any]], list[Any]] | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def params(self) -> type:
        return self.spec.params
