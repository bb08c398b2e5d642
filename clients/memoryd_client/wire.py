"""What goes over the socket: JSON-RPC 2.0 requests out, replies and notifications in,
and the errors a caller sees. Shared by the blocking and the asyncio client."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
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

# A daemon opens its socket at once and answers BUSY, with `data.reason` STARTING (and
# `data.rebuild`, the index's progress, while it rebuilds), until `health` says ok.
# Clients wait that out, up to START_WAIT seconds by default; any other BUSY (too many
# connections, no scheduler) is the caller's to see at once. The daemon's errors name
# the same code and reason (a test keeps the two in step).
BUSY = -32005
STARTING = "starting"
# Params the daemon refused; `data.field` names the one.
INVALID_PARAMS = -32602
START_WAIT = 60.0
_FIRST_PAUSE, _LONGEST_PAUSE = 0.05, 1.0


def start_progress(failure: RpcFailure) -> dict[str, Any] | None:
    """What a starting daemon said of its progress (`{}` when it said nothing more), or
    None when `failure` is anything else."""
    data = failure.data
    if failure.code != BUSY or not isinstance(data, dict) or data.get("reason") != STARTING:
        return None
    rebuild = data.get("rebuild")
    return rebuild if isinstance(rebuild, dict) else {}


class StartWait:
    """The pauses between tries while a daemon starts: 0.05 s, doubling, at most 1 s,
    until `limit` seconds have passed since the first busy answer (0: no waiting).
    `on_wait` hears the daemon's progress before each pause."""

    def __init__(self, limit: float, on_wait: Callable[[dict[str, Any]], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.on_wait = on_wait
        self._clock = clock
        self._since: float | None = None
        self._pause = _FIRST_PAUSE

    def pause(self, failure: RpcFailure) -> float:
        """Seconds to wait before the next try; raises `failure` (saying how long it
        waited) when it is not a start or the limit has passed."""
        progress = start_progress(failure)
        if progress is None:
            raise failure
        now = self._clock()
        if self._since is None:
            self._since = now
        waited = now - self._since
        if waited + self._pause > self.limit:
            raise RpcFailure(failure.code, f"{failure.message} (memoryd was still starting "
                             f"after {waited:.0f} s of waiting)", failure.data) from None
        pause, self._pause = self._pause, min(self._pause * 2, _LONGEST_PAUSE)
        if self.on_wait is not None:
            self.on_wait(progress)
        return pause


def describe_start(progress: dict[str, Any]) -> str:
    """A line for a person while a daemon starts."""
    if progress.get("total"):
        return (f"memoryd is starting: rebuilding its index, {progress.get('percent', 0)}% "
                f"({progress.get('done', 0)} of {progress['total']})")
    return "memoryd is starting"


def retry_delays(retries: int, first: float) -> Iterator[float]:
    """The pauses between connection attempts: `first`, doubling, at most 5 s."""
    delay = first
    for _ in range(retries):
        yield delay
        delay = min(delay * 2, 5.0)


def unavailable(socket_path: object, exc: OSError) -> DaemonUnavailable:
    return DaemonUnavailable(f"no memoryd answers on {socket_path}: {exc.strerror or exc}")


def strict_json(data: str | bytes) -> Any:
    """JSON as memoryd reads it: `NaN` and `Infinity`, which Python's json takes, are a
    ValueError, as the daemon's decoder refuses them."""
    return json.loads(data, parse_constant=_no_constant)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def request_line(request_id: int | None, method: str, params: dict[str, Any] | None) -> bytes:
    """One request (a notification when `request_id` is None), newline-terminated."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if request_id is not None:
        message["id"] = request_id
    return json.dumps(message, ensure_ascii=False).encode() + b"\n"


def failure_of(reply: dict[str, Any] | None) -> RpcFailure | None:
    """A reply's error as RpcFailure, or None for a result."""
    if not reply or "error" not in reply:
        return None
    err = reply["error"] or {}
    return RpcFailure(err.get("code", 0), err.get("message", ""), err.get("data"))


def outcome(reply: dict[str, Any]) -> Any:
    """A reply's result, or its error raised as RpcFailure."""
    failure = failure_of(reply)
    if failure is not None:
        raise failure
    return reply.get("result")


def refused_at_start(reply: dict[str, Any] | None) -> RpcFailure | None:
    """The error of a reply that says the daemon is starting, else None: a JSON-RPC
    error, or an MCP tools/call result with isError (its `_meta` holds the error)."""
    failure = failure_of(reply)
    result = (reply or {}).get("result")
    if failure is None and isinstance(result, dict) and result.get("isError"):
        error = (result.get("_meta") or {}).get("memoryd/error")
        if isinstance(error, dict):
            failure = RpcFailure(error.get("code", 0), error.get("message", ""),
                                 error.get("data"))
    return failure if failure is not None and start_progress(failure) is not None else None


def is_notification(message: dict[str, Any]) -> bool:
    return "id" not in message and "method" in message


def unattributed_error(message: dict[str, Any]) -> bool:
    """An error answered with a null id: the daemon could not read the request's line
    (over 1 MiB, not JSON) to find it. Requests are answered in order, so it is the
    oldest unanswered request's; a client waiting for its own id would wait for ever."""
    return "error" in message and message.get("id") is None and "method" not in message


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
