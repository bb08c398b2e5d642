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
from memoryd.protocol.dispatch import Connection, Dispatcher
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


def _idle_limit(conn: Connection, idle_timeout: float) -> float:
    return math.inf if conn.subscription is not None or idle_timeout <= 0 else idle_timeout


async def serve_connection(stream: trio.SocketStream, dispatcher: Dispatcher,
                           conn: Connection, unsubscribe: Callable[[Subscription], None],
                           drain: Drain,
                           idle_timeout: float = 0) -> None:
    framer = LineFramer(MAX_LINE)
    send_lock = trio.Lock()
    # Chunks read while the one before still runs (at most READ_AHEAD waiting).
    chunks_in, chunks_out = trio.open_memory_channel[list[bytes | LineTooLong]](READ_AHEAD)
    busy = False  # a chunk runs or its replies go out: what is read now is prepared

    async def send(method: str, params: dict[str, Any]) -> None:
        async with send_lock:
            await stream.send_all(encode_notification(method, params))

    async def read_ahead() -> None:
        """Receive and frame chunks while earlier ones run: a pipelining client's next
        writes start embedding before the writes ahead of them have committed."""
        async with chunks_in:
            while True:
                try:
                    data = await drain.receive(stream)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    data = None  # a reset peer: what it sent before still runs, as a close
                if data is None:
                    return
                chunk = list(framer.feed(data))
                if busy or chunks_in.statistics().current_buffer_used:  # it will wait
                    dispatcher.prepare([e for e in chunk if not isinstance(e, LineTooLong)],
                                       conn)
                await chunks_in.send(chunk)

    conn.send = send
    outbox = _Outbox(stream, send_lock)
    too_large = TooLarge(f"line exceeds {MAX_LINE} bytes (1 MiB); it was discarded, "
                         "the connection is still open")
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_ahead)
            forwarding = None  # the subscription being forwarded
            while True:
                busy = False
                # The idle limit runs only while nothing is received and nothing runs.
                with trio.move_on_after(_idle_limit(conn, idle_timeout)) as idle:
                    try:
                        chunk = await chunks_out.receive()
                    except trio.EndOfChannel:  # the peer closed, or the daemon stops
                        break
                if idle.cancelled_caught:
                    break  # idle for too long
                busy = True
                lines: list[bytes] = []
                for event in chunk:
                    if isinstance(event, LineTooLong):
                        await dispatcher.handle_many(lines, conn, outbox.add)
                        lines = []
                        await outbox.add([encode_error(None, too_large)])
                    else:
                        lines.append(event)
                await dispatcher.handle_many(lines, conn, outbox.add)
                await outbox.flush()
                if conn.subscription is not None and conn.subscription is not forwarding:
                    forwarding = conn.subscription  # a new one after an unsubscribe too
                    nursery.start_soon(_forward_notifications, conn.subscription, stream,
                                       send_lock)
            nursery.cancel_scope.cancel()
    except* (trio.BrokenResourceError, trio.ClosedResourceError):
        pass  # the client went away; nothing of ours is half-done
    finally:
        if conn.subscription is not None:
            unsubscribe(conn.subscription)
        with trio.move_on_after(1) as cleanup:
            cleanup.shield = True
            await stream.aclose()
