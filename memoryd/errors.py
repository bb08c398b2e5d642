"""The errors a client can see, each named after the state it reports.

Every error carries its JSON-RPC code; the dispatcher translates them at one
boundary. Anything that is not an `RpcError` is *our* failure and becomes an
internal error whose details stay in the log.
"""

from __future__ import annotations

from typing import Any


class RpcError(Exception):
    code: int = -32603

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class ParseError(RpcError):
    code = -32700


class InvalidRequest(RpcError):
    code = -32600


class MethodNotFound(RpcError):
    code = -32601


class InvalidParams(RpcError):
    """The params are wrong; the message names the field."""

    code = -32602

    def __init__(self, field: str | None, problem: str, prefix: str = "params") -> None:
        where = f" - at `{prefix}.{field}`" if field else ""
        super().__init__(f"Invalid params: {problem}{where}", {"field": field} if field else None)
        self.field = field


class NotFound(RpcError):
    code = -32001


class Conflict(RpcError):
    """A stale `version`: somebody else changed the memory first."""

    code = -32002


class Forbidden(RpcError):
    code = -32003


class TooLarge(RpcError):
    code = -32004


class Busy(RpcError):
    """Not now: `data.reason` says why (BusyReason). Clients wait out STARTING alone."""

    code = -32005


class BusyReason:
    STARTING = "starting"  # the socket is open, the indexes are not ready yet
    TOO_MANY_CONNECTIONS = "too_many_connections"
    TOO_MANY_SUBSCRIBERS = "too_many_subscribers"
    NO_SCHEDULER = "no_scheduler"


class StorageFull(RpcError):
    """The disk (or the user's quota) is full: the change was rolled back whole."""

    code = -32006


class InvalidFile(NotFound):
    """The memory's file is there but memoryd refuses it (invalid front matter, a
    link, not a regular file, too large); it is reported in `stats`."""

    code = -32007


INTERNAL_ERROR = -32603

# The table docs/protocol.md and tests check against: one definition of the codes.
ERROR_CODES: dict[int, str] = {
    ParseError.code: "parse error: the line is not JSON (or holds invalid UTF-8, or nests "
                     "too deeply); that line only",
    InvalidRequest.code: "invalid request (not a request object, a batch array, a bad "
                         "`jsonrpc`)",
    MethodNotFound.code: "unknown method or tool",
    InvalidParams.code: "invalid params; the message names the field",
    NotFound.code: "not found",
    Conflict.code: "conflict: stale `version`",
    Forbidden.code: "forbidden: another agent's scope, `jobs/run` from an agent, or another "
                    "user's connection",
    TooLarge.code: "too large: a line over 1 MiB (it is discarded; the connection stays open)",
    Busy.code: "busy, `data.reason` says why: `starting` (the indexes are being built at "
               "start-up; `data.rebuild` has the progress; `health` says when they are "
               "ready; the clients wait it out), `too_many_connections` (over "
               "`server.max_connections`), `too_many_subscribers` (half of those may "
               "subscribe), `no_scheduler` (the job scheduler is not running)",
    StorageFull.code: "disk full (ENOSPC/EDQUOT): nothing of the change was made",
    InvalidFile.code: "the memory's file is invalid or unsafe and is left alone (see "
                      "`stats` rejected_files)",
    INTERNAL_ERROR: "internal error (details in the daemon's log)",
}
