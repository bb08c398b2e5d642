"""An HTTP server on 127.0.0.1 that misbehaves on purpose: each connection's request
is read and then handed to a behaviour, which writes whatever it likes."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Behaviour = Callable[[socket.socket], None]


def answer(body: bytes, length: int | None = None,
           content_type: str = "application/json") -> bytes:
    head = (f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: "
            f"{len(body) if length is None else length}\r\n\r\n")
    return head.encode() + body


def read_request(conn: socket.socket) -> bytes:
    """The whole request, head and body: closing a socket with bytes unread resets
    the connection, and the peer would lose what was sent to it."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = conn.recv(65536)
        if not chunk:
            return received
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length and (chunk := conn.recv(65536)):
        body += chunk
    return head + b"\r\n\r\n" + body


@contextmanager
def endpoint(behaviour: Behaviour) -> Iterator[str]:
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5)
                try:
                    read_request(conn)
                    behaviour(conn)
                except OSError:
                    pass  # the client gave up: as it should

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/v1"
    finally:
        stop.set()
        thread.join(15)
        server.close()
