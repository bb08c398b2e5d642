"""Client: a blocking connection to memoryd (plain `socket`), for scripts and tools.

One persistent connection; `call` sends a request and waits for its reply, keeping
notifications that arrive meanwhile for `notifications()`. `batch()` pipelines many
calls in one write (consecutive memory_write calls become one group commit). When the
daemon restarts, the next call reconnects with backoff and re-sends the connection's
`initialize` and subscription.
"""

from __future__ import annotations

import json
import os
import select
import socket
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from memoryd_client.framing import LineFramer, LineTooLong
from memoryd_client.paths import resolve_socket
from memoryd_client.tools import ToolMethods
from memoryd_client.wire import (
    NOT_LISTENING,
    START_WAIT,
    ConnectionLost,
    DaemonUnavailable,
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


class Pending:
    """The reply to one call of a batch, filled when the batch ends."""

    def __init__(self, method: str) -> None:
        self.method = method
        self._reply: dict[str, Any] | None = None

    @property
    def done(self) -> bool:
        return self._reply is not None

    def result(self) -> Any:
        """The call's result; raises RpcFailure if the daemon answered an error."""
        if self._reply is None:
            raise RuntimeError("the batch has not been sent yet (leave its `with` block)")
        return outcome(self._reply)


class Batch(ToolMethods):
    """Calls collected, then sent as one write and answered in order on exit."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._calls: list[tuple[str, dict[str, Any] | None, Pending]] = []

    def call(self, method: str, params: dict[str, Any] | None = None) -> Pending:
        pending = Pending(method)
        self._calls.append((method, params, pending))
        return pending

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None and self._calls:
            self._client._send_batch(self._calls)


class Client(ToolMethods):
    def __init__(self, socket_path: str | os.PathLike[str] | None = None, *,
                 root: str | os.PathLike[str] | None = None, timeout: float | None = 60.0,
                 name: str | None = None, scope: str | None = None, retries: int = 5,
                 backoff: float = 0.1, start_wait: float = START_WAIT,
                 on_start: Callable[[dict[str, Any]], None] | None = None) -> None:
        """Connect now. `name` makes this connection an agent (its own scope
        `agent:<name>`); `scope` sets where its writes go. `retries` connection attempts
        follow the first, `backoff` seconds apart and doubling (0 fails at once). A call
        that a starting daemon answers busy is sent again, for up to `start_wait`
        seconds (0: the busy error at once); `on_start` hears each wait's progress."""
        self.socket_path = resolve_socket(root, socket_path)
        self.timeout = timeout
        self.retries, self.backoff = retries, backoff
        self.start_wait, self.on_start = start_wait, on_start
        # The `initialize` params sent on every (re)connection (the MCP bridge sets the
        # host's own).
        self.reinitialize = initialize_params(name, scope)
        self.server_info: dict[str, Any] | None = None
        self._sock: socket.socket | None = None
        self._lines: deque[bytes] = deque()
        self._notes: deque[Notification] = deque()
        self._next_id = 0
        self._subscribed = False
        self._connect()

    # -- connection ------------------------------------------------------------------
    def _connect(self) -> None:
        pauses = retry_delays(self.retries, self.backoff)
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(self.timeout)
            try:
                sock.connect(str(self.socket_path))
                break
            except NOT_LISTENING as exc:
                sock.close()
                pause = next(pauses, None)
                if pause is None:
                    raise unavailable(self.socket_path, exc) from None
                time.sleep(pause)
        self._sock = sock
        self._framer = LineFramer(max_line=1 << 30)
        self._lines.clear()
        if self.reinitialize is not None:
            self.server_info = self.call("initialize", self.reinitialize)
        if self._subscribed:
            self.call("events/subscribe")

    @property
    def connected(self) -> bool:
        """A connection is open and the daemon has not closed it (a closed one is
        opened again by the next call that may reconnect)."""
        return self._sock is not None and not self._peer_closed()

    def _peer_closed(self) -> bool:
        """True when the daemon has closed this connection (EOF waiting to be read)."""
        assert self._sock is not None
        if self._lines:
            return False
        readable, _, _ = select.select([self._sock], [], [], 0)
        if not readable:
            return False
        try:
            return not self._sock.recv(1, socket.MSG_PEEK)
        except OSError:
            return True

    def _ensure(self) -> socket.socket:
        if self._sock is None or self._peer_closed():
            self.close()
            self._connect()
        assert self._sock is not None
        return self._sock

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- raw lines (the MCP bridge copies them through) ------------------------------
    def send_line(self, line: bytes, reconnect: bool = True) -> None:
        """Send one line; reconnect first if the daemon closed the connection (unless
        `reconnect` is False: then ConnectionLost)."""
        if reconnect:
            sock = self._ensure()
        elif self._sock is None:
            raise ConnectionLost("not connected")
        else:
            sock = self._sock
        self._send(sock, line.rstrip(b"\n") + b"\n")

    def _send(self, sock: socket.socket, data: bytes) -> None:
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):  # not the caller's own stdout's
            self.close()
            raise ConnectionLost("the daemon closed the connection") from None

    def read_line(self) -> bytes:
        """The next line from the daemon; ConnectionLost at end of stream."""
        while not self._lines:
            if self._sock is None:
                raise ConnectionLost("not connected")
            try:
                data = self._sock.recv(65536)
            except ConnectionResetError:
                data = b""
            if not data:
                self.close()
                raise ConnectionLost("the daemon closed the connection")
            self._lines.extend(e for e in self._framer.feed(data)
                               if not isinstance(e, LineTooLong))
        return self._lines.popleft()

    def read_message(self) -> dict[str, Any]:
        return json.loads(self.read_line())

    # -- calls -----------------------------------------------------------------------
    def call(self, method: str, params: dict[str, Any] | None = None,
             on_notification: Callable[[Notification], None] | None = None) -> Any:
        """One request and its result; RpcFailure for an error reply. Notifications that
        arrive meanwhile go to `on_notification`, else wait for `notifications()`. A
        starting daemon's busy answers are waited out (`start_wait`)."""
        wait = StartWait(self.start_wait, self.on_start)
        while True:
            self._next_id += 1
            request_id = self._next_id
            self.send_line(request_line(request_id, method, params))
            try:
                return outcome(self._wait(request_id, on_notification))
            except RpcFailure as failure:
                time.sleep(wait.pause(failure))  # a start waited out, else raised

    def _wait(self, request_id: int,
              on_notification: Callable[[Notification], None] | None = None) -> dict[str, Any]:
        while True:
            message = self.read_message()
            if message.get("id") == request_id or unattributed_error(message):
                return message
            if is_notification(message):
                if on_notification is not None:
                    on_notification(message)
                else:
                    self._notes.append(message)

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """A JSON-RPC notification: sent, never answered."""
        self.send_line(request_line(None, method, params))

    def batch(self) -> Batch:
        """`with client.batch() as b: p = b.memory_write(...)`; on exit the calls go in
        one write and `p.result()` holds each reply."""
        return Batch(self)

    def _send_batch(self, calls: list[tuple[str, dict[str, Any] | None, Pending]]) -> None:
        """Send the calls in one write; those a starting daemon refused go again (in
        their order) after a pause, until `start_wait` runs out."""
        wait = StartWait(self.start_wait, self.on_start)
        while True:
            ids = []
            lines = []
            for method, params, _ in calls:
                self._next_id += 1
                ids.append(self._next_id)
                lines.append(request_line(self._next_id, method, params))
            self._send(self._ensure(), b"".join(lines))
            by_id = {request_id: pending for request_id, (_, _, pending)
                     in zip(ids, calls, strict=True)}
            while by_id:
                message = self.read_message()
                key = next(iter(by_id)) if unattributed_error(message) else message.get("id")
                pending = by_id.pop(key, None)  # type: ignore[arg-type]
                if pending is not None:
                    pending._reply = message
                elif is_notification(message):
                    self._notes.append(message)
            refused = [(call, failure) for call in calls
                       if (failure := refused_at_start(call[2]._reply)) is not None]
            if not refused:
                return
            try:
                time.sleep(wait.pause(refused[0][1]))
            except RpcFailure:
                return  # waited long enough: each refused call's result raises
            calls = [call for call, _ in refused]

    def notifications(self, timeout: float | None = None) -> Iterator[Notification]:
        """Subscribe to memory and reminder events now, and iterate over them as they
        come (`notifications/memory`, `notifications/reminder`). With `timeout`, the
        iteration ends after that many quiet seconds."""
        if not self._subscribed:
            self.call("events/subscribe")
            self._subscribed = True
        return self._stream(timeout)

    def _stream(self, timeout: float | None) -> Iterator[Notification]:
        while True:
            while self._notes:
                yield self._notes.popleft()
            if not self._lines and timeout is not None:
                assert self._sock is not None
                readable, _, _ = select.select([self._sock], [], [], timeout)
                if not readable:
                    return
            message = self.read_message()
            if is_notification(message):
                yield message


__all__ = ["Batch", "Client", "ConnectionLost", "DaemonUnavailable", "Pending", "RpcFailure"]
