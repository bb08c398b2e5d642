"""How long a client waits out a starting daemon, and what counts as one: the pauses
(on an injected clock), the bound, the replies that say "starting" (a JSON-RPC error or
an MCP tool result), and the busy answers that are not a start."""

from __future__ import annotations

import pytest

from memoryd.errors import Busy, BusyReason, InvalidParams
from memoryd_client.wire import (
    BUSY,
    INVALID_PARAMS,
    START_WAIT,
    STARTING,
    RpcFailure,
    StartWait,
    refused_at_start,
    start_progress,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def starting(rebuild: dict | None = None) -> RpcFailure:
    return RpcFailure(BUSY, "busy: starting", {"reason": STARTING, "rebuild": rebuild})


def test_the_client_and_the_daemon_name_the_same_code_and_reason():
    assert Busy.code == BUSY and BusyReason.STARTING == STARTING
    assert InvalidParams.code == INVALID_PARAMS
    assert START_WAIT == 60.0


def test_pauses_double_to_a_second_and_end_at_the_bound():
    clock = Clock()
    wait = StartWait(5.0, clock=clock)
    pauses = []
    with pytest.raises(RpcFailure) as ended:
        while True:
            pause = wait.pause(starting())
            pauses.append(pause)
            clock.now += pause
    assert pauses[:6] == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0]
    assert set(pauses[6:]) == {1.0}
    assert sum(pauses) <= 5.0 < sum(pauses) + 1.0, "waits up to the bound, not past it"
    assert ended.value.code == BUSY and "still starting after 5 s" in ended.value.message
    assert ended.value.data["reason"] == STARTING


def test_no_wait_at_all_when_the_bound_is_zero():
    with pytest.raises(RpcFailure, match="still starting"):
        StartWait(0, clock=Clock()).pause(starting())


@pytest.mark.parametrize("failure", [
    RpcFailure(BUSY, "too many connections", {"reason": BusyReason.TOO_MANY_CONNECTIONS}),
    RpcFailure(BUSY, "no scheduler", {"reason": BusyReason.NO_SCHEDULER}),
    RpcFailure(BUSY, "busy, said an older daemon", None),
    RpcFailure(-32602, "Invalid params", {"reason": STARTING}),
])
def test_any_other_error_is_raised_at_once(failure):
    with pytest.raises(RpcFailure) as raised:
        StartWait(60, clock=Clock()).pause(failure)
    assert raised.value is failure


def test_a_starting_reply_is_recognised_as_an_error_and_as_an_mcp_tool_result():
    rebuild = {"percent": 40, "step": "embedding", "done": 4, "total": 10}
    error = {"jsonrpc": "2.0", "id": 1, "error": {
        "code": BUSY, "message": "busy: index rebuilding (40%)",
        "data": {"reason": STARTING, "rebuild": rebuild}}}
    assert start_progress(refused_at_start(error)) == rebuild
    tool_result = {"jsonrpc": "2.0", "id": 2, "result": {
        "isError": True, "content": [{"type": "text", "text": "busy"}],
        "_meta": {"memoryd/error": {"code": BUSY, "message": "busy: starting",
                                    "data": {"reason": STARTING, "rebuild": None}}}}}
    assert start_progress(refused_at_start(tool_result)) == {}
    for other in ({"jsonrpc": "2.0", "id": 3, "result": {"isError": False}},
                  {"jsonrpc": "2.0", "id": 4, "result": {"total": 0}},
                  {"jsonrpc": "2.0", "id": 5, "error": {"code": -32001, "message": "x"}}):
        assert refused_at_start(other) is None
