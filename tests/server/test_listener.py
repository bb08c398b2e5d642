"""The accept loop: waits out running out of descriptors (on trio's clock, never
spinning), raises what would never clear, stops when the listener closes."""

from __future__ import annotations

import errno
from typing import Any

import pytest
import trio
import trio.testing
from structlog.testing import capture_logs

from memoryd.server.listener import CAPACITY_WAIT, accept_forever


class ScriptedListener(trio.abc.Listener[Any]):
    """accept() answers from a script: an exception is raised, anything else returned;
    past the script's end the listener is closed."""

    def __init__(self, script: list[Any]) -> None:
        self.script = list(script)
        self.accepted_at: list[float] = []

    async def accept(self) -> Any:
        await trio.lowlevel.checkpoint()
        self.accepted_at.append(trio.current_time())
        if not self.script:
            raise trio.ClosedResourceError
        step = self.script.pop(0)
        if isinstance(step, BaseException):
            raise step
        return step

    async def aclose(self) -> None:
        pass


def full(code: int = errno.EMFILE) -> OSError:
    return OSError(code, "out of descriptors")


async def test_running_out_of_descriptors_waits_then_serves_the_next_connection(
        autojump_clock: trio.testing.MockClock):
    handled: list[str] = []

    async def handle(stream: Any) -> None:
        handled.append(stream)

    listener = ScriptedListener([full(), full(errno.ENFILE), full(), "conn-1", "conn-2"])
    with capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            start = trio.current_time()
            await accept_forever(listener, handle, nursery)
    assert handled == ["conn-1", "conn-2"]
    gaps = [b - a for a, b in zip(listener.accepted_at, listener.accepted_at[1:], strict=False)]
    assert gaps[:3] == [pytest.approx(CAPACITY_WAIT)] * 3, "each try waits, none spins"
    assert listener.accepted_at[0] == start
    events = [e["event"] for e in logs]
    assert events == ["accept.at_capacity", "accept.recovered"], "once a spell, not a try"
    assert logs[1]["tries"] == 3


async def test_an_error_that_would_never_clear_is_raised_not_retried():
    async def handle(stream: Any) -> None:
        raise AssertionError("nothing to handle")

    listener = ScriptedListener([full(errno.EBADF)])
    raised: list[OSError] = []
    with capture_logs() as logs:
        try:
            async with trio.open_nursery() as nursery:
                await accept_forever(listener, handle, nursery)
        except* OSError as group:
            raised.extend(group.exceptions)  # type: ignore[arg-type]
    assert [e.errno for e in raised] == [errno.EBADF]
    assert len(listener.accepted_at) == 1
    assert [e["event"] for e in logs] == ["accept.failed"]
