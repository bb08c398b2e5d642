"""One connection over a real socket pair, with trio's autojump clock standing in for
the wall clock: the idle timeout, subscriptions that come and go, and lines read
ahead while a call runs."""

from __future__ import annotations

import json
from types import SimpleNamespace

import trio

from memoryd.config import parse_config
from memoryd.events import EventBus
from memoryd.protocol.dispatch import Connection, Dispatcher
from memoryd.protocol.tool import Tool
from memoryd.server.connection import Drain, serve_connection
from memoryd.server.methods import server_methods
from memoryd.tools.spec import SPECS


class Peer:
    """The client end of a connection served by `serve_connection`."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buf = b""

    async def call(self, method: str) -> dict:
        await self.stream.send_all(json.dumps({"id": 1, "method": method}).encode() + b"\n")
        return await self.line()

    async def line(self) -> dict:
        while b"\n" not in self.buf:
            chunk = await self.stream.receive_some(65536)
            assert chunk, "the connection was closed"
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    async def closed(self) -> bool:
        return await self.stream.receive_some(65536) == b""


class Notifications:
    """The engine's notification seam (subscribe, unsubscribe, counts) over a real
    EventBus: all the server methods under test need of an engine."""

    def __init__(self, events: EventBus) -> None:
        self.events = events

    def subscribe(self, can_see):
        return self.events.subscribe(can_see)

    def unsubscribe(self, subscription) -> None:
        self.events.unsubscribe(subscription)

    def subscription_counts(self) -> dict[str, int]:
        return {"subscribers": self.events.subscribers, "events_dropped": self.events.dropped}


async def open_connection(nursery: trio.Nursery, events: EventBus, idle_timeout: float) -> Peer:
    ours, theirs = trio.socket.socketpair()
    dispatcher = Dispatcher({}, server_methods(SimpleNamespace(
        engine=Notifications(events), config=parse_config({})), {}))
    nursery.start_soon(serve_connection, trio.SocketStream(ours), dispatcher, Connection(),
                       events.unsubscribe, Drain(), idle_timeout)
    return Peer(trio.SocketStream(theirs))


async def test_a_silent_connection_is_closed_after_the_idle_timeout(autojump_clock):
    events = EventBus()
    async with trio.open_nursery() as nursery:
        quiet = await open_connection(nursery, events, idle_timeout=60)
        chatty = await open_connection(nursery, events, idle_timeout=60)
        assert (await quiet.call("ping"))["result"] == {}
        for _ in range(5):  # activity keeps a connection open past the timeout
            await trio.sleep(40)
            assert (await chatty.call("ping"))["result"] == {}
        assert await quiet.closed()
        await trio.sleep(61)
        assert await chatty.closed()


async def test_a_subscribed_connection_is_never_cut_for_being_quiet(autojump_clock):
    events = EventBus()
    async with trio.open_nursery() as nursery:
        listener = await open_connection(nursery, events, idle_timeout=60)
        assert (await listener.call("events/subscribe"))["result"]["subscribed"]
        await trio.sleep(3600)
        events.publish("notifications/memory", {"event": "written", "id": "a"})
        assert (await listener.line())["params"]["id"] == "a"
        assert (await listener.call("events/unsubscribe"))["result"] == {"subscribed": False}
        await trio.sleep(61)  # unsubscribed: idle again
        assert await listener.closed()


async def test_subscribe_after_unsubscribe_delivers_again(autojump_clock):
    events = EventBus()
    async with trio.open_nursery() as nursery:
        peer = await open_connection(nursery, events, idle_timeout=0)
        await peer.call("events/subscribe")
        await peer.call("events/unsubscribe")
        assert (await peer.call("events/subscribe"))["result"]["subscribed"]
        events.publish("notifications/memory", {"event": "written", "id": "again"})
        assert (await peer.line())["params"]["id"] == "again"
        await peer.stream.aclose()


def _slow_writes() -> tuple[list[list[str]], trio.Event, trio.Event, Tool]:
    """A memory_write tool whose "slow" write runs until `finish` is set, and that
    records what it was asked to prepare."""
    prepared: list[list[str]] = []
    started, finish = trio.Event(), trio.Event()

    async def write(caller, p) -> dict:
        if p.content == "slow":
            started.set()
            await finish.wait()
        return {"content": p.content}

    async def write_many(caller, ps, early) -> list:
        return [await write(caller, p) for p in ps]

    def prepare(caller, ps) -> list:
        prepared.append([p.content for p in ps])
        return [None] * len(ps)

    return prepared, started, finish, Tool(SPECS["memory_write"], write, write_many, prepare)


def _write(i: int, content: str) -> bytes:
    return json.dumps({"id": i, "method": "memory_write",
                       "params": {"content": content}}).encode() + b"\n"


async def test_lines_received_while_a_call_runs_are_prepared_and_answered_in_order(
        autojump_clock):
    """A pipelining client's next writes are prepared while the call before them runs
    (a long one: the idle timeout does not run meanwhile), then answered in order."""
    prepared, started, finish, tool = _slow_writes()
    ours, theirs = trio.socket.socketpair()
    peer = Peer(trio.SocketStream(theirs))

    # A call that never comes (a tool that fails first) fails the test, not hangs it:
    # the clock jumps to the deadline when everything waits.
    with trio.fail_after(3600):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve_connection, trio.SocketStream(ours),
                               Dispatcher({"memory_write": tool}, {}), Connection(), EventBus(),
                               Drain(), 60)
            await peer.stream.send_all(_write(1, "slow"))
            await started.wait()
            await peer.stream.send_all(_write(2, "next") + _write(3, "after"))
            await trio.sleep(600)  # the slow call runs for ten minutes, past the idle timeout
            assert prepared == [["next", "after"]]
            finish.set()
            assert [(await peer.line())["result"]["content"] for _ in range(3)] == [
                "slow", "next", "after"]
            await trio.sleep(61)
            assert await peer.closed(), "idle again: the timeout runs"


async def test_on_shutdown_a_busy_connection_answers_what_it_received_then_closes(
        autojump_clock):
    """Shutdown stops reading; what was received before it is still answered."""
    _, started, finish, tool = _slow_writes()
    ours, theirs = trio.socket.socketpair()
    peer = Peer(trio.SocketStream(theirs))

    # A call that never comes (a tool that fails first) fails the test, not hangs it:
    # the clock jumps to the deadline when everything waits.
    with trio.fail_after(3600):
        async with trio.open_nursery() as nursery:
            drain = Drain()
            nursery.start_soon(serve_connection, trio.SocketStream(ours),
                               Dispatcher({"memory_write": tool}, {}), Connection(), EventBus(),
                               drain, 60)
            await peer.stream.send_all(_write(1, "slow"))
            await started.wait()
            await peer.stream.send_all(_write(2, "received"))
            await trio.sleep(1)
            drain.begin()
            finish.set()
            assert [(await peer.line())["result"]["content"] for _ in range(2)] == [
                "slow", "received"]
            assert await peer.closed()
