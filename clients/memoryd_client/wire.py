"""What goes over the socket: JSON-RPC 2.0 requests out, replies and notifications in,
and the errors a caller sees. Shared by the blocking and the asyncio client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any


class DaemonUnavailable(ConnectionError):
    """Nobody answers on the socket (the daemon is not running, or went away)."""


class ConnectionLost(DaemonUnavailable):
    """The daemon closed the connection while a call was waiting for its reply. The call
    may or may not have taken effect; the next call reconnects."""


class RpcFailure(Exception):
    """The daemon answered with a JSON-RPC error: `code`, `message`, `data`."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code, self.message, self.data = code, message, data


# A connection the daemon refuses or that has no socket: retried, then DaemonUnavailable.
NOT_LISTENING = (FileNotFoundError, ConnectionRefusedError, NotADirectoryError)


def retry_delays(retries: int, first: float) -> Iterator[float]:
    """The pauses between connection attempts: `first`, doubling, at most 5 s."""
    delay = first
    for _ in range(retries):
        yield delay
        delay = min(delay * 2, 5.0)


def unavailable(socket_path: object, exc: OSError) -> DaemonUnavailable:
    return DaemonUnavailable(f"no memoryd answers on {socket_path}: {exc.strerror or exc}")


def request_line(request_id: int | None, method: str, params: dict[str, Any] | None) -> bytes:
    """One request (a notification when `request_id` is None), newline-terminated."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if request_id is not None:
        message["id"] = request_id
    return json.dumps(message, ensure_ascii=False).encode() + b"\n"


def outcome(reply: dict[str, Any]) -> Any:
    """A reply's result, or its error raised as RpcFailure."""
    if "error" in reply:
        err = reply["error"] or {}
        raise RpcFailure(err.get("code", 0), err.get("message", ""), err.get("data"))
    return reply.get("result")


def is_notification(message: dict[str, Any]) -> bool:
    return "id" not in message and "method" in message


def initialize_params(name: str | None, scope: str | None) -> dict[str, Any] | None:
    """The `initialize` a named client sends on every (re)connection, or None."""
    if name is None and scope is None:
        return None
    params: dict[str, Any] = {"protocolVersion": "2025-06-18", "capabilities": {}}
    if name is not None:
        params["clientInfo"] = {"name": name, "version": ""}
    if scope is not None:
        params["scope"] = scope
    return params
