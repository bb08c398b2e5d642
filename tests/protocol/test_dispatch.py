"""Dispatcher.prepare: lines a connection received while earlier ones run hand their
calls to the tool's `prepare`, decoded, in order; anything else is left alone. What was
decoded and prepared is carried to the batch that runs the calls."""

from __future__ import annotations

import json

from structlog.testing import capture_logs

from memoryd.errors import Busy
from memoryd.protocol.dispatch import Connection, Dispatcher
from memoryd.protocol.tool import Tool
from memoryd.scopes import Caller
from memoryd.tools.spec import SPECS


async def _never(caller: Caller, params: object) -> dict:
    raise AssertionError("preparing runs nothing")


async def _never_batch(caller: Caller, params: list, early: list) -> list:
    raise AssertionError("preparing runs nothing")


def _line(method: str, **params: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()


def test_prepare_hands_the_decoded_calls_to_the_tool_in_order() -> None:
    seen: list[tuple[Caller, list[str]]] = []
    def prepare(caller: Caller, ps: list) -> list:
        seen.append((caller, [p.content for p in ps]))
        return [None] * len(ps)

    write = Tool(SPECS["memory_write"], _never, _never_batch, prepare)
    read = Tool(SPECS["memory_read"], _never)
    dispatcher = Dispatcher({"memory_write": write, "memory_read": read}, {})
    conn = Connection()
    lines = [
        _line("memory_write", content="first"),
        b"not json at all",
        _line("memory_write", tags="not a list"),  # invalid params: left to handle_many
        _line("memory_read", id="abc"),  # a tool that does not prepare
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "memory_write", "arguments": {"content": "second"}}
                    }).encode(),
        _line("no_such_tool"),
    ]
    routed = dispatcher.prepare(lines, conn)
    assert seen == [(conn.caller, ["first", "second"])]
    assert routed is not None and len(routed) == len(lines)


def test_a_refused_call_is_not_prepared_and_a_failing_prepare_is_only_logged() -> None:
    def broken(caller: Caller, ps: list) -> None:
        raise RuntimeError("a bug in prepare")

    write = Tool(SPECS["memory_write"], _never, _never_batch, broken)
    line = _line("memory_write", content="x")
    with capture_logs() as logs:  # refused while the index rebuilds: never reaches it
        Dispatcher({"memory_write": write}, {}, gate=lambda name: Busy("rebuilding")
                   ).prepare([line], Connection())
    assert logs == []
    with capture_logs() as logs:
        Dispatcher({"memory_write": write}, {}).prepare([line], Connection())
    assert [e["event"] for e in logs] == ["request.prepare_failed"]


async def test_what_was_prepared_reaches_the_batch_decoded_once() -> None:
    """The params `prepare` decoded, and what it made of each call, are what the batch
    runs with; a call the gate refuses by its turn is answered with the refusal."""
    prepared: list[object] = []
    ran: list[tuple[list, list]] = []

    def prepare(caller: Caller, ps: list) -> list:
        prepared.extend(ps)
        return [f"built {p.content}" for p in ps]

    async def batch(caller: Caller, ps: list, early: list) -> list:
        ran.append((ps, early))
        return [{"ok": p.content} for p in ps]

    write = Tool(SPECS["memory_write"], _never, batch, prepare)
    busy = {"now": False}
    dispatcher = Dispatcher({"memory_write": write}, {},
                            gate=lambda name: Busy("rebuilding") if busy["now"] else None)
    conn = Connection()
    lines = [_line("memory_write", content=c) for c in ("a", "b")]
    routed = dispatcher.prepare(lines, conn)
    replies = await dispatcher.handle_many(lines, conn, ahead=routed)
    assert [json.loads(r)["result"] for r in replies] == [{"ok": "a"}, {"ok": "b"}]
    [(params, early)] = ran
    assert all(p is q for p, q in zip(params, prepared, strict=True))  # decoded once
    assert early == ["built a", "built b"]
    # Refused by the time its turn comes: the gate is asked again then.
    routed = dispatcher.prepare([_line("memory_write", content="c")], conn)
    busy["now"] = True
    (reply,) = await dispatcher.handle_many([_line("memory_write", content="c")], conn,
                                            ahead=routed)
    assert json.loads(reply)["error"]["message"] == "rebuilding"
