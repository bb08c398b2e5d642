"""Reading what an upstream HTTP server sends, bounded: every body is capped, every
SSE line is capped, and the whole exchange has one deadline (a peer that sends one
byte a second meets it too, since each read takes only what has arrived)."""

from __future__ import annotations

import http.client
import socket
import time
from collections.abc import Callable, Iterator

MAX_REPLY = 32 << 20  # bytes of a whole reply (a completion, a model list, an error)
MAX_LINE = 1 << 20  # bytes of one SSE line read for its text; a longer one passes through
BLOCK = 65536


class UpstreamError(Exception):
    """The upstream broke a bound: too large, too slow, or gone mid-reply."""


class Exchange:
    """One request's connection and its deadline."""

    def __init__(self, conn: http.client.HTTPConnection, seconds: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.conn = conn
        self.clock = clock
        self.deadline = clock() + seconds
        self.seconds = seconds
        # The socket, kept: http.client drops its own reference when a reply ends the
        # connection, and each read's timeout is what is left of the deadline.
        self.sock: socket.socket | None = None

    def left(self) -> float:
        remaining = self.deadline - self.clock()
        if remaining <= 0:
            raise UpstreamError(f"the upstream took longer than {self.seconds:g} s")
        return remaining

    def open(self, method: str, url: str, body: bytes | None,
             headers: dict[str, str]) -> http.client.HTTPResponse:
        self.conn.timeout = self.left()
        self.conn.connect()
        self.sock = self.conn.sock
        self.conn.request(method, url, body=body, headers=headers)
        self._arm()
        return self.conn.getresponse()

    def _arm(self) -> None:
        if self.sock is not None:
            self.sock.settimeout(self.left())

    def read(self, resp: http.client.HTTPResponse, limit: int = MAX_REPLY) -> bytes:
        """The whole body, at most `limit` bytes."""
        chunks, size = [], 0
        while block := self._block(resp):
            size += len(block)
            if size > limit:
                raise UpstreamError(f"the upstream's reply is over {limit} bytes")
            chunks.append(block)
        return b"".join(chunks)

    def lines(self, resp: http.client.HTTPResponse, max_line: int = MAX_LINE
              ) -> Iterator[tuple[bytes, bool]]:
        """The body as it arrives, a line at a time: (bytes, whole). A line over
        `max_line` comes in pieces with `whole` False (pass them on, do not parse)."""
        pending, overlong = b"", False
        while block := self._block(resp):
            *complete, pending = (pending + block).split(b"\n")
            for line in complete:
                yield line + b"\n", not overlong
                overlong = False
            if len(pending) > max_line:
                yield pending, False
                pending, overlong = b"", True
        if pending:
            yield pending, not overlong

    def _block(self, resp: http.client.HTTPResponse) -> bytes:
        self._arm()
        try:
            return resp.read1(BLOCK)
        except TimeoutError:
            raise UpstreamError(f"the upstream took longer than {self.seconds:g} s") from None
        except (OSError, http.client.HTTPException) as exc:
            raise UpstreamError(f"the upstream's reply broke off: {type(exc).__name__} "
                                f"{exc}") from None
