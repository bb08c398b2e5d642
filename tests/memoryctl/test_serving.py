"""The bounds every local HTTP server of memoryctl keeps, on a real socket: a client
that trickles its request a byte at a time is cut off at the request deadline, and
one that goes quiet at the idle timeout, while other clients are served."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from memoryctl.serving import BodyError, BoundedHandler, Limits, bind

LIMITS = Limits(clients=8, idle=0.5, request=1.0)


class Echo(BoundedHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        try:
            body = self.read_body(1024, required=True)
            status, reply = 200, body
        except BodyError as exc:
            status, reply = exc.status, exc.message.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


@contextmanager
def server() -> Iterator[int]:
    httpd = bind("127.0.0.1", 0, Echo, LIMITS)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()


def until_closed(sock: socket.socket, trickle: bytes) -> float:
    """Seconds until the server closes `sock`, sending `trickle` a byte every 0.1 s."""
    started = time.monotonic()
    sock.setblocking(False)
    for byte in trickle * 100:
        try:
            if sock.recv(1024) == b"":
                return time.monotonic() - started
        except BlockingIOError:
            pass
        except OSError:
            return time.monotonic() - started
        try:
            sock.send(bytes([byte]))
        except OSError:
            return time.monotonic() - started
        time.sleep(0.1)
    raise AssertionError("the server never closed the connection")


def test_a_trickled_request_is_cut_off_at_the_request_deadline() -> None:
    with server() as port:
        head = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 900\r\n\r\n"
        with socket.create_connection(("127.0.0.1", port)) as slow:
            took = until_closed(slow, head + b"x" * 900)
        assert LIMITS.request <= took < LIMITS.request + 2, took
        with socket.create_connection(("127.0.0.1", port)) as quick:
            quick.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                          b"Connection: close\r\n\r\nok")
            assert quick.makefile("rb").read().endswith(b"\r\n\r\nok")


def test_a_quiet_client_is_cut_off_at_the_idle_timeout() -> None:
    with server() as port, socket.create_connection(("127.0.0.1", port)) as quiet:
        quiet.sendall(b"POST / HTTP/1.1\r\n")
        quiet.settimeout(5)
        started = time.monotonic()
        assert quiet.recv(1024) == b""  # closed, nothing answered
        assert time.monotonic() - started < LIMITS.idle + 2


def test_bodies_are_read_only_with_a_length_in_bounds() -> None:
    with server() as port:
        for head, status in ((b"Content-Length: -1", 400), (b"Content-Length: 2000", 413),
                             (b"Content-Length: ten", 400), (b"X-None: 1", 411)):
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\n" + head + b"\r\n\r\n")
                assert s.recv(1024).startswith(b"HTTP/1.1 %d" % status), head


def test_past_the_client_limit_a_connection_is_answered_busy() -> None:
    with server() as port:
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(LIMITS.clients)]
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as late:
                reply = late.recv(4096)
            assert reply.startswith(b"HTTP/1.1 503")
            assert json.loads(reply.split(b"\r\n\r\n", 1)[1])["error"]["type"] == "server_busy"
        finally:
            for s in held:
                s.close()
