"""AsyncClient: one persistent asyncio connection to memoryd.

Calls from many tasks share the connection: each request carries its id, a reader
task hands every reply to the call waiting for it and every notification to the
`notifications()` queue. `batch()` writes many calls at once. After the daemon goes
away, the next call reconnects with backoff and re-sends `initialize` and the
subscription. (For trio, see examples/trio_client.py.)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator, Callable
from typing import Any

from memoryd_client.framing import LineFramer, LineTooLong
from memoryd_client.paths import resolve_socket
from memoryd_client.tools import AsyncToolMethods, ToolMethods
from memoryd_client.wire import (
    NOT_LISTENING,
    START_WAIT,
    ConnectionLost,
    RpcFailure,
    StartWait,
    initialize_params,
    is_notification,
    outcome,
    refused_at_start,
    request_line,
    retry_delays,
    unattributed_error,
    unavailable,
)

Notification = dict[str, Any]


class AsyncBatch(ToolMethods):
    """Calls collected, then written at once on exit; each call's future holds its reply.

    `async with client.batch() as b: f = b.memory_write(...)`, then `await f` (or
    `f.result()`), which raises RpcFailure for an error reply."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client
        self._calls: list[tuple[str, dict[str, Any] | None, asyncio.Future[Any]]] = []

    def call(self, method: str, params: dict[str, Any] | None = None) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._calls.append((method, params, future))
        return future

    async def __aenter__(self) -> AsyncBatch:
        return self

    async def __aexit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None and self._calls:
            replies = await self._client._send_many([(m, p) for m, p, _ in self._calls])
            for (_, _, future), reply in zip(self._calls, replies, strict=True):
                try:
                    future.set_result(outcome(reply))
                except Exception as exc:
                    future.set_exception(exc)


class AsyncClient(AsyncToolMethods):
    def __init__(self, socket_path: str | os.PathLike[str] | None = None, *,
                 root: str | os.PathLike[str] | None = None, name: str | None = None,
                 scope: str | None = None, retries: int = 5, backoff: float = 0.1,
                 start_wait: float = START_WAIT,
                 on_start: Callable[[dict[str, Any]], None] | None = None) -> None:
        """Nothing happens until `await client.connect()` (or `async with client`).
        The options are Client's."""
        self.socket_path = resolve_socket(root, socket_path)
        self.retries, self.backoff = retries, backoff
        self.start_wait, self.on_start = start_wait, on_start
        self._init = initialize_params(name, scope)
        self.server_info: dict[str, Any] | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._notes: asyncio.Queue[Notification] = asyncio.Queue()
        self._next_id = 0
        self._subscribed = False
        self._lock = asyncio.Lock()  # one (re)connection at a time

    async def connect(self) -> AsyncClient:
        async with self._lock:
            if self._writer is None:
                await self._open()
        return self

    async def _open(self) -> None:
        pauses = retry_delays(self.retries, self.backoff)
        while True:
            try:
                reader, writer = await asyncio.open_unix_connection(
                    str(self.socket_path), limit=1 << 20)
                break
            except NOT_LISTENING as exc:
                pause = next(pauses, None)
                if pause is None:
                    raise unavailable(self.socket_path, exc) from None
                await asyncio.sleep(pause)
        self._writer = writer
        self._reader_task = asyncio.create_task(self._read(reader))
        if self._init is not None:
            self.server_info = outcome(await self._request("initialize", self._init))
        if self._subscribed:
            outcome(await self._request("events/subscribe", None))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        framer = LineFramer(max_line=1 << 30)
        try:
            while data := await reader.read(65536):
                for line in framer.feed(data):
                    if isinstance(line, LineTooLong):
                        continue
                    message = json.loads(line)
                    key = (next(iter(self._waiting), None) if unattributed_error(message)
                           else message.get("id"))
                    future = self._waiting.pop(key, None)  # type: ignore[arg-type]
                    if future is not None:
                        if not future.done():
                            future.set_result(message)
                    elif is_notification(message):
                        self._notes.put_nowait(message)
        except (ConnectionError, OSError):
            pass
        finally:
            self._writer = None
            waiting, self._waiting = self._waiting, {}
            for future in waiting.values():
                if not future.done():
                    future.set_exception(ConnectionLost("the daemon closed the connection"))

    async def _send_many(self, calls: list[tuple[str, dict[str, Any] | None]]
                         ) -> list[dict[str, Any]]:
        """The replies to `calls`, sent in one write; those a starting daemon refused go
        again after a pause, until `start_wait` runs out."""
        wait = StartWait(self.start_wait, self.on_start)
        replies: list[dict[str, Any]] = [{} for _ in calls]
        todo = list(range(len(calls)))
        while True:
            got = await self._send_once([calls[i] for i in todo])
            refused: list[tuple[int, RpcFailure]] = []
            for i, reply in zip(todo, got, strict=True):
                replies[i] = reply
                if (failure := refused_at_start(reply)) is not None:
                    refused.append((i, failure))
            if not refused:
                return replies
            try:
                await asyncio.sleep(wait.pause(refused[0][1]))
            except RpcFailure:
                return replies  # waited long enough: each refused call raises
            todo = [i for i, _ in refused]

    async def _send_once(self, calls: list[tuple[str, dict[str, Any] | None]]
                         ) -> list[dict[str, Any]]:
        if self._writer is None:
            await self.connect()
        assert self._writer is not None
        loop = asyncio.get_running_loop()
        futures = []
        lines = []
        for method, params in calls:
            self._next_id += 1
            future: asyncio.Future[dict[str, Any]] = loop.create_future()
            self._waiting[self._next_id] = future
            futures.append(future)
            lines.append(request_line(self._next_id, method, params))
        try:
            self._writer.write(b"".join(lines))
            await self._writer.drain()
        except (ConnectionError, OSError):
            self._writer = None
            for future in futures:
                future.cancel()
            raise ConnectionLost("the daemon closed the connection") from None
        return list(await asyncio.gather(*futures))

    async def _request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        return (await self._send_many([(method, params)]))[0]

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """One request and its result; RpcFailure for an error reply."""
        return outcome(await self._request(method, params))

    def batch(self) -> AsyncBatch:
        return AsyncBatch(self)

    async def subscribe(self) -> None:
        """Subscribe to memory and reminder events now: every event from the answer on
        is queued for `notifications()`."""
        if not self._subscribed:
            await self.call("events/subscribe")
            self._subscribed = True

    async def notifications(self) -> AsyncIterator[Notification]:
        """Subscribe (unless `subscribe` did), then yield the events as they come."""
        await self.subscribe()
        while True:
            yield await self._notes.get()

    async def aclose(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()
        if self._reader_task is not None:
            self._reader_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader_task
            self._reader_task = None

    async def __aenter__(self) -> AsyncClient:
        return await self.connect()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
