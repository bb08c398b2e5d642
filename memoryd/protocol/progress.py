"""Progress of a long call, sent to its caller as MCP's `notifications/progress`
({progressToken, progress, total, message}) on the caller's own connection.

The caller asks for it by giving a `progressToken` in the call's `_meta` (MCP), in
`tools/call` params or, for the shorthand, in the tool's params; without one nothing
is sent. Updates are spaced at least MIN_INTERVAL apart, except the last."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

Send = Callable[[str, dict[str, Any]], Awaitable[None]]
MIN_INTERVAL = 0.1  # seconds between two updates


class Progress:
    def __init__(self, send: Send | None = None, token: str | int | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._send = send if token is not None else None
        self.token = token
        self._clock = clock
        self._last = -float("inf")

    async def __call__(self, done: int, total: int | None, message: str) -> None:
        if self._send is None:
            return
        now = self._clock()
        if now - self._last < MIN_INTERVAL and (total is None or done < total):
            return
        self._last = now
        params: dict[str, Any] = {"progressToken": self.token, "progress": done,
                                  "message": message}
        if total is not None:
            params["total"] = total
        try:
            await self._send("notifications/progress", params)
        except Exception:  # the caller went away: the work goes on, its reply is lost
            self._send = None


NO_PROGRESS = Progress()


def token_of(meta: Any) -> str | int | None:
    """The progressToken of a `_meta` object, if it is a usable one."""
    if isinstance(meta, dict):
        token = meta.get("progressToken")
        if isinstance(token, str | int) and not isinstance(token, bool):
            return token
    return None
