"""`memoryctl web`: a local page over the daemon's socket (stdlib HTTP, no build step).

It binds 127.0.0.1 and answers only requests that carry the random token printed in
its URL (as a query parameter once, then a SameSite cookie, or the X-Memoryd-Token
header), and only for a Host header naming this machine, so neither another local user
nor a web page in the browser can read memories through it. The page calls
`/api/<method>`, which forwards to the daemon's read-only tools; `--allow-edit` adds
memory_update and memory_delete.
"""

from __future__ import annotations

import hmac
import json
import secrets
import sys
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from memoryctl.serving import LOOPBACK, bind, parse_listen, serve_until_interrupted
from memoryd_client import ClientPool, DaemonUnavailable, RpcFailure

READ = ("stats", "jobs/list", "graph/topics", "memory_list", "memory_search",
        "memory_smart_search", "memory_explain", "memory_read", "memory_history",
        "memory_backlinks", "memory_trash")
EDIT = ("memory_update", "memory_delete")
STATIC = {"/": ("index.html", "text/html; charset=utf-8"),
          "/app.js": ("app.js", "text/javascript; charset=utf-8"),
          "/app.css": ("app.css", "text/css; charset=utf-8")}
MAX_BODY = 1 << 20
COOKIE = "memoryd_token"


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
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "memoryd-web"

        def log_message(self, format: str, *args: Any) -> None:  # quiet: it is a UI
            pass

        def _send(self, status: int, body: bytes, content_type: str,
                  cookie: bool = False) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("X-Frame-Options", "DENY")
            self.send_header("Content-Security-Policy",
                             "default-src 'self'; img-src 'self' data:; "
                             "frame-ancestors 'none'")
            if cookie:
                self.send_header("Set-Cookie", f"{COOKIE}={web.token}; Path=/; HttpOnly; "
                                               "SameSite=Strict")
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, data: Any) -> None:
            self._send(status, json.dumps(data, ensure_ascii=False).encode(),
                       "application/json")

        def _allowed(self) -> bool:
            """A Host naming this machine (no DNS rebinding) and the token."""
            host = (self.headers.get("Host") or "").lower()
            if host not in {f"127.0.0.1:{web.port}", f"localhost:{web.port}",
                            f"[::1]:{web.port}"}:
                return False
            given = parse_qs(urlsplit(self.path).query).get("token", [""])[0] \
                or self.headers.get("X-Memoryd-Token", "")
            if not given:
                morsel = SimpleCookie(self.headers.get("Cookie", "")).get(COOKIE)
                given = morsel.value if morsel else ""
            return hmac.compare_digest(given.encode(), web.token.encode())

        def _forbidden(self) -> None:
            self._send(403, b"forbidden: open the address `memoryctl web` printed "
                            b"(it carries the access token)\n", "text/plain; charset=utf-8")

        def do_GET(self) -> None:
            if not self._allowed():
                self._forbidden()
                return
            path = urlsplit(self.path).path
            if path not in STATIC:
                self._send(404, b"not found\n", "text/plain; charset=utf-8")
                return
            name, content_type = STATIC[path]
            self._send(200, _page(name), content_type, cookie=path == "/")

        def do_POST(self) -> None:
            if not self._allowed():
                self._forbidden()
                return
            path = urlsplit(self.path).path
            if path == "/api/config":
                self._json(200, {"allow_edit": web.allow_edit})
                return
            method = path.removeprefix("/api/")
            if not path.startswith("/api/") or method not in web.allowed:
                self._json(403, {"error": {"message": f"{method} is not allowed here" + (
                    "" if method not in EDIT else " (start with --allow-edit)")}})
                return
            try:
                length = int(self.headers.get("Content-Length", "0"))
                if length > MAX_BODY:
                    raise ValueError("too large")
                params = json.loads(self.rfile.read(length) or b"{}")
                if not isinstance(params, dict):
                    raise ValueError("not an object")
            except ValueError as exc:
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
