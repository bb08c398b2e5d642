"""The tool table: one definition of each tool's name, description and params.

`tools/list`, the dispatcher, memoryctl's check and the README's tool table all
come from here.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from memoryd.access import Caller
from memoryd.tools.params import Params

ToolFn = Callable[[Any, Caller, Any], Awaitable[dict[str, Any]]]
# Many calls at once: a result or an RpcError per call, in order (group commit).
BatchFn = Callable[[Any, Caller, list[Any]], Awaitable[list[Any]]]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    params: type[Params]
    fn: ToolFn
    batch: BatchFn | None = None

    def input_schema(self) -> dict[str, Any]:
        schema = msgspec.json.schema(self.params)
        defs = schema.pop("$defs", {})
        body = defs.pop(self.params.__name__)
        body.pop("title", None)
        body.pop("description", None)  # the Struct's docstring is not for clients
        if defs:
            body["$defs"] = defs
        return body

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description,
                "inputSchema": self.input_schema()}


TOOLS: dict[str, Tool] = {}


def tool(name: str, params: type[Params], batch: BatchFn | None = None
         ) -> Callable[[ToolFn], ToolFn]:
    def register(fn: ToolFn) -> ToolFn:
        TOOLS[name] = Tool(name, inspect.cleandoc(fn.__doc__ or ""), params, fn, batch)
        return fn

    return register


def load_tools() -> dict[str, Tool]:
    from memoryd.tools import memory, reminders, retrieval  # noqa: F401  (registers them)

    return TOOLS
