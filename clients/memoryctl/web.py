"""`memoryctl web`: a local page over the daemon's socket (stdlib HTTP, no build step).

It binds 127.0.0.1 and answers only for a Host header naming this machine (no DNS
rebinding). The page itself (index.html, app.js, app.css) is public code and holds no
memory. Memories come only from `/api/<method>`, which forwards to the daemon's
read-only tools (`--allow-edit` adds memory_write, memory_update and memory_delete) and asks for:
- the random token printed in the URL, in the `X-Memoryd-Token` header. The page keeps
  it in its own memory, never in a cookie: a browser sends a cookie of 127.0.0.1 to
  every port of 127.0.0.1, so any local server the browser visits would get it;
- `Content-Type: application/json`. With the custom header, a page of another origin
  must ask first (a CORS preflight, which this server never allows); a "simple"
  no-cors request cannot send either;
- for an edit, an `Origin` naming this server: SameSite counts every port of a host
  as one site, so only the Origin tells a page on 127.0.0.1:8766 from ours.
"""

from __future__ import annotations

import hmac
import json
import secrets
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from memoryctl.serving import (
    LOOPBACK,
    BodyError,
    BoundedHandler,
    bind,
    parse_listen,
    serve_until_interrupted,
)
from memoryd.schema import CATEGORIES
from memoryd_client import ClientPool, DaemonUnavailable, RpcFailure

READ = ("stats", "jobs/list", "graph/topics", "graph/links", "memory_list", "memory_search",
        "memory_smart_search", "memory_explain", "memory_read", "memory_history",
        "memory_backlinks", "memory_trash", "memory_entities")
EDIT = ("memory_write", "memory_update", "memory_delete")
STATIC = {"/": ("index.html", "text/html; charset=utf-8"),
          "/app.js": ("app.js", "text/javascript; charset=utf-8"),
          "/app.css": ("app.css", "text/css; charset=utf-8"),
          "/favicon.ico": ("favicon.ico", "image/x-icon")}
MAX_BODY = 1 << 20


class Web:
    def __init__(self, socket_path: Path, allow_edit: bool, token: str | None = None) -> None:
        self.socket_path = socket_path
        self.allowed = set(READ) | (set(EDIT) if allow_edit else set())
        self.allow_edit = allow_edit
        self.token = token or secrets.token_urlsafe(24)
        self.port = 0
        self.pool = ClientPool(socket_path)


def _page(name: str) -> bytes:
    return resources.files("memoryctl").joinpath("web", name).read_bytes()


def make_handler(web: Web) -> type[BaseHTTPRequestHandler]:
    class Handler(BoundedHandler):
        server_version = "memoryd-web"

        def log_message(self, format: str, *args: Any) -> None:  # quiet: it is a UI
            pass

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("X-Frame-Options", "DENY")
            self.send_header("Content-Security-Policy",
                             "default-src 'self'; img-src 'self' data:; "
                             "frame-ancestors 'none'")
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, data: Any) -> None:
            self._send(status, json.dumps(data, ensure_ascii=False).encode(),
                       "application/json")

        def _ours(self) -> bool:
            """A Host naming this machine and port: no DNS rebinding."""
            return (self.headers.get("Host") or "").lower() in _names(web.port)

        def _api_refusal(self, method: str) -> str | None:
            """Why an API call is refused, or None: the token in its header, a JSON
            body, and for an edit an Origin naming this server."""
            given = self.headers.get("X-Memoryd-Token", "")
            if not given or not hmac.compare_digest(given.encode(), web.token.encode()):
                return ("no access token: open the address `memoryctl web` printed (the "
                        "page sends its token in the X-Memoryd-Token header)")
            kind = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
            if kind != "application/json":
                return "the body must be JSON (Content-Type: application/json)"
            origin = (self.headers.get("Origin") or "").lower()
            if method in EDIT and origin.removeprefix("http://") not in _names(web.port):
                return "an edit must come from this page (its Origin)"
            return None

        def _forbidden(self, why: str) -> None:
            self._json(403, {"error": {"message": f"forbidden: {why}"}})

        def do_GET(self) -> None:
            if not self._ours():
                self._send(403, b"forbidden: not this machine's address\n",
                           "text/plain; charset=utf-8")
                return
            path = urlsplit(self.path).path
            if path not in STATIC:
                self._send(404, b"not found\n", "text/plain; charset=utf-8")
                return
            name, content_type = STATIC[path]
            self._send(200, _page(name), content_type)

        def _body(self) -> bytes | None:
            """The request's body, read whole before any answer (on a kept-alive
            connection what is left unread would be taken for the next request); None,
            and the connection closed, when its length is not one to read."""
            try:
                return self.read_body(MAX_BODY, required=False)
            except BodyError:
                return None

        def do_POST(self) -> None:
            body = self._body()
            path = urlsplit(self.path).path
            method = path.removeprefix("/api/")
            refusal = ("not this machine's address" if not self._ours()
                       else self._api_refusal(method))
            if refusal is not None:
                self._forbidden(refusal)
                return
            if body is None:
                self._json(400, {"error": {"message": "bad request body: its length is "
                                                      f"not 0 to {MAX_BODY} bytes"}})
                return
            if path == "/api/config":
                self._json(200, {"result": {"allow_edit": web.allow_edit,
                                            "categories": list(CATEGORIES)}})
                return
            if not path.startswith("/api/") or method not in web.allowed:
                self._json(403, {"error": {"message": f"{method} is not allowed here" + (
                    "" if method not in EDIT else " (start with --allow-edit)")}})
                return
            try:
                params = json.loads(body or b"{}")
                if not isinstance(params, dict):
                    raise ValueError("not an object")
            except (ValueError, RecursionError) as exc:
                self._json(400, {"error": {"message": f"bad request body: {exc}"}})
                return
            try:
                self._json(200, {"result": web.pool.call(method, params)})
            except RpcFailure as exc:
                self._json(400, {"error": {"code": exc.code, "message": exc.message}})
            except (DaemonUnavailable, OSError) as exc:
                self._json(503, {"error": {"message": f"memoryd is not answering on "
                                                      f"{web.socket_path}: {exc}"}})

    return Handler


def _names(port: int) -> set[str]:
    """How a browser names this server: its Host header, or its Origin's host."""
    return {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}


def serve(socket_path: Path, host: str, port: int, allow_edit: bool,
          token: str | None = None) -> tuple[ThreadingHTTPServer, Web]:
    web = Web(socket_path, allow_edit, token)
    server = bind(host, port, make_handler(web))
    web.port = server.server_address[1]
    return server, web


def run(socket_path: Path, listen: str, allow_edit: bool) -> int:
    host, port = parse_listen(listen)
    if host not in LOOPBACK:
        print("memoryctl web: it serves this machine only (--listen 127.0.0.1:PORT)",
              file=sys.stderr)
        return 2
    server, web = serve(socket_path, host, port, allow_edit)
    print(f"memoryctl web: open http://127.0.0.1:{web.port}/?token={web.token}"
          + ("  (editing allowed)" if allow_edit else "  (read-only)"), flush=True)
    serve_until_interrupted(server)
    return 0
