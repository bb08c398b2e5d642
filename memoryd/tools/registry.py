"""Tool handlers bound to their specs (tools/spec.py holds the table).

A handler module registers each function under its tool's name with `@handler`;
`bind(engine)` gives the dispatcher one Tool per spec, with the engine bound in (a
handler calls the engine's use cases and nothing of the server's), and fails
at start if a spec has no handler or a handler no spec.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import msgspec

from memoryd.protocol.tool import Tool
from memoryd.scopes import Caller
from memoryd.tools.spec import SPECS

if TYPE_CHECKING:
    from memoryd.engine import Engine

# (engine, caller, params) -> the tool's result Struct (tools/results.py)
Handler = Callable[[Any, Caller, Any], Awaitable[msgspec.Struct]]
# Many calls at once: a result or an RpcError per call, in order (group commit); each
# call's params with what the prepare handler made of it (None: it did not run).
BatchHandler = Callable[[Any, Caller, list[Any], list[Any]], Awaitable[list[Any]]]
# Calls a connection has received but not yet run (the ones before them still run):
# work that can start early (a write's memory built, its text embedding), one result a
# call, carried to the batch that runs them.
PrepareHandler = Callable[[Any, Caller, list[Any]], list[Any]]

_HANDLERS: dict[str, tuple[Handler, BatchHandler | None, PrepareHandler | None]] = {}


def handler(name: str, batch: BatchHandler | None = None,
            prepare: PrepareHandler | None = None) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        if name not in SPECS:
            raise LookupError(f"handler for {name!r}, which tools/spec.py does not define")
        _HANDLERS[name] = (fn, batch, prepare)
        return fn

    return register


def handlers() -> dict[str, tuple[Handler, BatchHandler | None, PrepareHandler | None]]:
    from memoryd.tools import (  # noqa: F401  (they register)
        conversation,
        data,
        memory,
        reminders,
        retrieval,
    )

    missing = set(SPECS) - set(_HANDLERS)
    if missing:
        raise LookupError(f"tools without a handler: {', '.join(sorted(missing))}")
    mismatched = [n for n, (_, batch, _) in _HANDLERS.items()
                  if (batch is not None) != SPECS[n].batchable]
    if mismatched:  # the spec says batchable exactly when a batch handler exists
        raise LookupError(f"batch handler and spec disagree: {', '.join(mismatched)}")
    return _HANDLERS


def _resolving_ids(fn: Handler, fields: tuple[str, ...]) -> Handler:
    """`fn`, given full ids where the caller gave a unique prefix of one."""
    async def resolved(engine: Any, caller: Caller, params: Any, **kwargs: Any
                       ) -> msgspec.Struct:
        for field in fields:
            setattr(params, field, await engine.reads.resolve_id(getattr(params, field),
                                                                 field))
        return await fn(engine, caller, params, **kwargs)

    return resolved


def bind(engine: Engine) -> dict[str, Tool]:
    """Every tool, in the table's order, with `engine` bound into its handler."""
    table = handlers()
    tools = {}
    for name, spec in SPECS.items():
        fn, batch, prepare = table[name]
        if spec.params.id_fields:
            fn = _resolving_ids(fn, spec.params.id_fields)
        tools[name] = Tool(spec, partial(fn, engine), partial(batch, engine) if batch else None,
                           partial(prepare, engine) if prepare else None)
    return tools
