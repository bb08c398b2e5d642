"""A blocking JSON-RPC client for the memoryd socket (stdlib only, plus the shared framer)."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryd.protocol.framing import LineFramer, LineTooLong
from memoryd.root import resolve_root


class DaemonUnavailable(Exception):
    """Nobody answers on the socket."""


class RpcFailure(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code, self.message, self.data = code, message, data


def resolve_socket(root_arg: str | None, socket_arg: str | None) -> Path:
    if socket_arg:
        return Path(socket_arg).expanduser().absolute()
    if env := os.environ.get("MEMORY_SOCKET"):
        return Path(env).expanduser().absolute()
    return resolve_root(root_arg) / "memory.sock"


class Client:
    def __init__(self, socket_path: Path, timeout: float | None = 60.0) -> None:
        self.socket_path = socket_path
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        try:
            self._sock.connect(str(socket_path))
        except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError) as exc:
            self._sock.close()
            raise DaemonUnavailable(str(exc)) from None
        self._framer = LineFramer(max_line=1 << 30)
        self._lines: list[bytes] = []
        self._next_id = 0

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_line(self, line: bytes) -> None:
        self._sock.sendall(line.rstrip(b"\n") + b"\n")

    def read_line(self) -> bytes:
        while not self._lines:
            data = self._sock.recv(65536)
            if not data:
                raise DaemonUnavailable("the daemon closed the connection")
            self._lines.extend(e for e in self._framer.feed(data)
                               if not isinstance(e, LineTooLong))
        return self._lines.pop(0)

    def read_message(self) -> dict[str, Any]:
        return json.loads(self.read_line())

    def call(self, method: str, params: dict[str, Any] | None = None,
             on_notification: Callable[[dict[str, Any]], None] | None = None) -> Any:
        """One request, its result; raises RpcFailure for a JSON-RPC error. Notifications
        that arrive meanwhile (progress) go to `on_notification`."""
        self._next_id += 1
        request = {"jsonrpc": "2.0", "id": self._next_id, "method": method,
                   "params": params or {}}
        self.send_line(json.dumps(request, ensure_ascii=False).encode())
        while True:
            reply = self.read_message()
            if reply.get("id") == self._next_id:
                break
            if "id" not in reply and on_notification is not None:
                on_notification(reply)
        if "error" in reply:
            err = reply["error"]
            raise RpcFailure(err.get("code", 0), err.get("message", ""), err.get("data"))
        return reply.get("result")
