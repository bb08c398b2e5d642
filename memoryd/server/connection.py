"""One client connection: frame lines, dispatch them in order, write replies.

Requests on a connection are answered in order. Replies go out as they are made,
gathered up to FLUSH_AT bytes (cheap pipelining: a burst of small replies is one
`send_all`), and always before the next request runs once that much is waiting: a
client that sends requests and never reads blocks its own connection (the socket's
buffer fills, `send_all` waits) instead of the daemon holding every reply it asked
for. Pushed notifications share the connection's send lock. On shutdown an idle
connection is closed at once and a busy one after it finishes what it has received. A
connection that sends nothing for `idle_timeout` seconds is closed, unless it is
subscribed to events (a listener is idle by design; a dead one is seen when its socket
closes).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import structlog
import trio

from memoryd.errors import TooLarge
from memoryd.events import Subscription
from memoryd.protocol.codec import encode_error, encode_notification
from memoryd.protocol.dispatch import Connection, Dispatcher, Routed
from memoryd.protocol.framing import MAX_LINE, LineFramer, LineTooLong

log = structlog.get_logger("memoryd.connection")
RECEIVE_SIZE = 65536
FLUSH_AT = 65536  # reply bytes waiting that are sent before the next request runs
READ_AHEAD = 1  # chunks received and waiting while one runs (one more is being framed)


class Drain:
    """Shared shutdown state: set `stopping`, then cancel every idle read."""

    def __init__(self) -> None:
        self.stopping = False
        self._idle: set[trio.CancelScope] = set()

    def begin(self) -> None:
        self.stopping = True
        for scope in list(self._idle):
            scope.cancel()

    async def receive(self, stream: trio.SocketStream) -> bytes | None:
        """Next chunk, or None when the peer closed or the daemon is stopping."""
        if self.stopping:
            return None
        with trio.CancelScope() as scope:
            self._idle.add(scope)
            try:
                return await stream.receive_some(RECEIVE_SIZE) or None
            finally:
                self._idle.discard(scope)
        return None


async def _forward_notifications(subscription: Subscription, stream: trio.SocketStream,
                                 send_lock: trio.Lock) -> None:
    async for method, params in subscription.receive:
        async with send_lock:
            await stream.send_all(encode_notification(method, params))


class _Outbox:
    """Replies waiting to go out: sent once FLUSH_AT bytes wait, and at a chunk's end."""

    def __init__(self, stream: trio.SocketStream, send_lock: trio.Lock) -> None:
        self.stream, self.send_lock = stream, send_lock
        self.waiting: list[bytes] = []
        self.size = 0

    async def add(self, replies: list[bytes]) -> None:
        self.waiting += replies
        self.size += sum(map(len, replies))
        if self.size >= FLUSH_AT:
            await self.flush()

    async def flush(self) -> None:
        if self.waiting:
            data, self.waiting, self.size = b"".join(self.waiting), [], 0
            async with self.send_lock:
                await self.stream.send_all(data)


async def serve_connection(stream: trio.SocketStream, dispatcher: Dispatcher,
                           conn: Connection, unsubscribe: Callable[[Subscription], None],
                           drain: Drain, idle_timeout: float = 0) -> None:
    await _Served(stream, dispatcher, conn, drain, idle_timeout).run(unsubscribe)


class _Served:
    """One connection's loop: chunks are received and framed ahead (`_read_ahead`),
    each is answered in order (`_answer`), a subscription gets its forwarder."""

    def __init__(self, stream: trio.SocketStream, dispatcher: Dispatcher, conn: Connection,
                 drain: Drain, idle_timeout: float) -> None:
        self.stream, self.dispatcher, self.conn, self.drain = stream, dispatcher, conn, drain
        self.idle_timeout = idle_timeout
        self.framer = LineFramer(MAX_LINE)
        self.send_lock = trio.Lock()
        self.outbox = _Outbox(stream, self.send_lock)
        # Chunks read while the one before still runs (at most READ_AHEAD waiting), each
        # with its lines as the dispatcher prepared them (None: not prepared).
        self.chunks_in, self.chunks_out = trio.open_memory_channel[
            tuple[list[bytes | LineTooLong], list[Routed] | None]](READ_AHEAD)
        self.busy = False  # a chunk runs or its replies go out: what is read now is prepared
        self.forwarding: Subscription | None = None
        conn.send = self._notify

    async def run(self, unsubscribe: Callable[[Subscription], None]) -> None:
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._read_ahead)
                while (chunk := await self._next_chunk()) is not None:
                    await self._answer(*chunk)
                    self._forward(nursery)
                nursery.cancel_scope.cancel()
        except* (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the client went away; nothing of ours is half-done
        finally:
            if self.conn.subscription is not None:
                unsubscribe(self.conn.subscription)
            with trio.move_on_after(1) as cleanup:
                cleanup.shield = True
                await self.stream.aclose()

    async def _notify(self, method: str, params: dict[str, Any]) -> None:
        async with self.send_lock:
            await self.stream.send_all(encode_notification(method, params))

    async def _read_ahead(self) -> None:
        """Receive and frame chunks while earlier ones run: a pipelining client's next
        writes start embedding before the writes ahead of them have committed."""
        async with self.chunks_in:
            while True:
                try:
                    data = await self.drain.receive(self.stream)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    data = None  # a reset peer: what it sent before still runs, as a close
                if data is None:
                    return
                chunk = list(self.framer.feed(data))
                ahead = None
                if self.busy or self.chunks_in.statistics().current_buffer_used:  # it waits
                    ahead = self.dispatcher.prepare(
                        [e for e in chunk if not isinstance(e, LineTooLong)], self.conn)
                await self.chunks_in.send((chunk, ahead))

    async def _next_chunk(self) -> tuple[list[bytes | LineTooLong], list[Routed] | None] | None:
        """The next chunk; None when the peer closed, the daemon stops, or the
        connection was idle too long (the limit runs only while nothing is received and
        nothing runs)."""
        self.busy = False
        limit = (math.inf if self.conn.subscription is not None or self.idle_timeout <= 0
                 else self.idle_timeout)
        with trio.move_on_after(limit):
            try:
                chunk = await self.chunks_out.receive()
            except trio.EndOfChannel:  # the peer closed, or the daemon stops
                return None
            self.busy = True
            return chunk
        return None  # idle for too long

    async def _answer(self, chunk: list[bytes | LineTooLong], ahead: list[Routed] | None
                      ) -> None:
        """Every request of the chunk answered in order (`ahead`: its lines as they were
        prepared); a line over the limit gets its error in its place."""
        lines: list[bytes] = []
        done = 0  # lines of the chunk answered
        for event in chunk:
            if isinstance(event, LineTooLong):
                await self._handle(lines, ahead, done)
                done += len(lines)
                lines = []
                await self.outbox.add([encode_error(None, _TOO_LARGE)])
            else:
                lines.append(event)
        await self._handle(lines, ahead, done)
        await self.outbox.flush()

    async def _handle(self, lines: list[bytes], ahead: list[Routed] | None, start: int
                      ) -> None:
        routed = ahead[start:start + len(lines)] if ahead is not None else None
        await self.dispatcher.handle_many(lines, self.conn, self.outbox.add, routed)

    def _forward(self, nursery: trio.Nursery) -> None:
        """A subscription made by the chunk (a new one after an unsubscribe too) gets
        its events forwarded from now on."""
        subscription = self.conn.subscription
        if subscription is not None and subscription is not self.forwarding:
            self.forwarding = subscription
            nursery.start_soon(_forward_notifications, subscription, self.stream,
                               self.send_lock)


_TOO_LARGE = TooLarge(f"line exceeds {MAX_LINE} bytes (1 MiB); it was discarded, the "
                      "connection is still open")
