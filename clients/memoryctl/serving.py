"""What the local HTTP servers (`memoryctl proxy`, `memoryctl web`) share: the
`--listen HOST:PORT` value, what counts as this machine, and serving until Ctrl-C."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def parse_listen(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"--listen takes HOST:PORT, not {value!r}")
    return host.strip("[]"), int(port)


def bind(host: str, port: int, handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    """A threading server whose request threads never hold up the exit."""
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def serve_until_interrupted(server: ThreadingHTTPServer) -> None:
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
