"""What the local HTTP servers (`memoryctl proxy`, `memoryctl web`) share: the
`--listen HOST:PORT` value, what counts as this machine, serving until Ctrl-C, and
the bounds every incoming connection keeps (Limits): so many served at once, a
request read whole within a deadline, a body of a length given up front."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class Limits:
    clients: int = 64  # connections served at once; one more is answered 503 and closed
    idle: float = 30.0  # seconds a connection may send nothing while sending a request
    # Seconds to send one whole request, head and body: a client that trickles a byte
    # at a time (never idle for `idle`) is cut off at this.
    request: float = 60.0

    def busy(self) -> bytes:
        body = json.dumps({"error": {"message": f"busy: {self.clients} connections are "
                                     "open; try again", "type": "server_busy",
                                     "code": 503}}).encode()
        return (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))


def parse_listen(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"--listen takes HOST:PORT, not {value!r}")
    return host.strip("[]"), int(port)


class BodyError(Exception):
    """A request body this server will not read: an HTTP status and why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class BoundedHandler(BaseHTTPRequestHandler):
    """A request handler whose requests must arrive within the server's Limits: GET's
    when its head is read, others' once `read_body` has read the body."""

    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        self.limits: Limits = getattr(self.server, "limits", Limits())
        self.timeout = self.limits.idle  # StreamRequestHandler sets it on the socket
        super().setup()

    def handle_one_request(self) -> None:
        self._cut = False
        self._timer = threading.Timer(self.limits.request, self._too_slow)
        self._timer.daemon = True
        self._timer.start()
        try:
            super().handle_one_request()
        except (OSError, ValueError):
            if not self._cut:  # what a connection cut for slowness says is no news
                raise
            self.close_connection = True
        finally:
            self._timer.cancel()

    def parse_request(self) -> bool:
        ok = super().parse_request()
        if ok and self.command in ("GET", "HEAD"):
            self._timer.cancel()
        return ok

    def _too_slow(self) -> None:
        self._cut = True
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def read_body(self, limit: int, required: bool) -> bytes:
        """The body, whole (so nothing of it is taken for the next request); BodyError
        when its length is missing (`required`), not a number 0..`limit`, or the body
        is chunked. The connection is closed after such a refusal."""
        declared = self.headers.get("Content-Length")
        try:
            if self.headers.get("Transfer-Encoding"):
                raise BodyError(411, "a chunked body is not read: send a Content-Length")
            if declared is None and required:
                raise BodyError(411, "a Content-Length is required")
            try:
                length = int(declared or "0")
            except ValueError:
                raise BodyError(400, f"Content-Length {declared[:40]!r} is not a "
                                "number") from None
            if length < 0:
                raise BodyError(400, "Content-Length is negative")
            if length > limit:
                raise BodyError(413, f"the request is over {limit} bytes")
            body = self.rfile.read(length)
            if len(body) < length:
                raise BodyError(400, "the body ended before its Content-Length")
        except BodyError:
            self.close_connection = True
            raise
        finally:
            self._timer.cancel()
        return body


class _Server(ThreadingHTTPServer):
    """A thread per connection, at most `limits.clients`; request threads never hold
    up the exit."""

    daemon_threads = True
    request_queue_size = 128  # the listen backlog: connections waiting to be accepted

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler],
                 limits: Limits) -> None:
        super().__init__(address, handler)
        self.limits = limits
        self._slots = threading.BoundedSemaphore(limits.clients)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            with contextlib.suppress(OSError):
                request.settimeout(1.0)
                request.sendall(self.limits.busy())
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def bind(host: str, port: int, handler: type[BaseHTTPRequestHandler],
         limits: Limits | None = None) -> ThreadingHTTPServer:
    return _Server((host, port), handler, limits or Limits())


def serve_until_interrupted(server: ThreadingHTTPServer) -> None:
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
