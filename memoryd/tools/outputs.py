"""MCP's `outputSchema` of every tool, generated from its result Struct
(tools/results.py), as `inputSchema` is from its params."""

from __future__ import annotations

import functools
from typing import Any

import msgspec
from msgspec import UNSET

from memoryd.tools.results import RESULTS

# A result is made by the daemon, not checked input: its schema says the types, the
# keys always present and the enumerations, but not the formats the params enforce
# (patterns, lengths, ranges), which a client's validator would read in its own regex
# dialect and could reject an answer over.
_LOOSE = ("pattern", "maxLength", "minLength", "maximum", "minimum", "exclusiveMinimum",
          "exclusiveMaximum", "maxItems", "minItems", "uniqueItems", "format")


def _loosen(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _loosen(v) for k, v in node.items() if k not in _LOOSE}
    if isinstance(node, list):
        return [_loosen(v) for v in node]
    return node


def _always_present(cls: type) -> list[str]:
    """The fields a result always carries: all but those left out when UNSET, and
    those left out at their default in a Struct that omits defaults."""
    omits = cls.__struct_config__.omit_defaults  # type: ignore[attr-defined]
    return [f.encode_name for f in msgspec.structs.fields(cls)
            if f.required or not (omits or f.default is UNSET)]


def output_schema(cls: type) -> dict[str, Any]:
    """The JSON Schema of result `cls`, an object at the top (as MCP requires)."""
    schema: dict[str, Any] = msgspec.json.schema(cls)
    defs: dict[str, Any] = schema.pop("$defs", {})
    by_name = {t.__name__: t for t in _structs(cls)}
    for name, body in defs.items():
        body.pop("description", None)  # a Struct's docstring is for this code's readers
        body.pop("title", None)
        if name in by_name:
            body["required"] = _always_present(by_name[name])
    top: dict[str, Any] = defs.pop(cls.__name__)
    if defs:
        top["$defs"] = defs
    loose: dict[str, Any] = _loosen(top)
    return loose


def _structs(cls: type) -> list[type]:
    """`cls` and every Struct its fields hold."""
    seen: dict[type, None] = {}

    def visit(t: Any) -> None:
        if isinstance(t, type) and issubclass(t, msgspec.Struct):
            if t in seen:
                return
            seen[t] = None
            for f in msgspec.structs.fields(t):
                visit(f.type)
        for arg in getattr(t, "__args__", ()) or ():
            visit(arg)

    visit(cls)
    return list(seen)


@functools.cache
def outputs() -> dict[str, dict[str, Any]]:
    """Every tool's output schema, by name: made at the first `tools/list`, not at each
    start of the daemon (about 50 ms of it)."""
    return {name: output_schema(cls) for name, cls in RESULTS.items()}
