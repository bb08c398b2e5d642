"""`memoryctl proxy`: an OpenAI-compatible endpoint that gives any chat client memory.

For each `POST /v1/chat/completions` the latest user message is recalled against
(`memory_recall`, the session from `memory_id` in the body or the `X-Memory-Id`
header, default `default`), the `<memory>` block goes in as a system message, the
request goes on to the upstream with the caller's own `Authorization`, and the reply
comes back unchanged (streamed as it arrives, or whole with `memory_hits` added). Then
both turns go to `memory_remember`, and the daemon learns facts and the summary in the
background. `GET /v1/models` is forwarded; `GET /health` says what is up.

Stdlib only (http.server, http.client), over memoryd_client: one thread per request, a
small pool of daemon connections.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import sys
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from memoryctl.chat import (
    ProxyError,
    inject,
    latest_user_text,
    number,
    parse_body,
    session_of,
    sse_text,
)
from memoryctl.serving import (
    LOOPBACK,
    BodyError,
    BoundedHandler,
    bind,
    parse_listen,
    serve_until_interrupted,
)
from memoryctl.upstream import Exchange, UpstreamError
from memoryd_client import ClientPool, DaemonUnavailable, RpcFailure

MEMORY_FIELDS = ("memory_id", "memory_top_k", "memory_recency_weight",
                 "memory_score_threshold")
MAX_BODY = 32 << 20  # a chat request larger than this is refused (413)
MAX_QUERY = 4096  # characters of the user message used as the recall query
MAX_TURN = 200_000  # characters of a turn remembered (the rest of a long reply is cut)


@dataclass
class Settings:
    upstream: str  # e.g. http://127.0.0.1:11434/v1
    socket_path: Path
    top_k: int | None = None  # the daemon's recall.top_k when None
    token_budget: int | None = None  # the daemon's recall.token_budget when None
    upstream_timeout: float = 600.0  # seconds for a whole exchange, reply included
    quiet: bool = False


class Memory:
    """The daemon, for request threads: a pool of connections; its absence is a 503."""

    def __init__(self, socket_path: Path) -> None:
        self.socket_path = socket_path
        self._pool = ClientPool(socket_path)

    def call(self, method: str, params: dict[str, Any]) -> Any:
        try:
            return self._pool.call(method, params)
        except DaemonUnavailable:
            raise ProxyError(503, f"memoryd is not running: nothing answers on "
                                  f"{self.socket_path}. Start it with `memoryd serve` "
                                  "(or `memoryctl service install`).",
                             "memoryd_unavailable") from None
        except (OSError, ValueError) as exc:
            raise ProxyError(503, f"memoryd failed to answer: {exc}",
                             "memoryd_unavailable") from None

    def up(self) -> bool:
        try:
            self.call("health", {})
        except ProxyError:
            return False
        return True


class Proxy:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.memory = Memory(settings.socket_path)
        parts = urlsplit(settings.upstream.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"--upstream must be an http(s) URL, not {settings.upstream!r}")
        if not 0 < settings.upstream_timeout < 86_400:
            raise ValueError("--timeout must be more than 0 seconds and less than a day")
        self.upstream = parts
        self.remembering: set[threading.Thread] = set()

    # -- upstream ------------------------------------------------------------------
    def _connection(self) -> http.client.HTTPConnection:
        parts = self.upstream
        cls = http.client.HTTPSConnection if parts.scheme == "https" else \
            http.client.HTTPConnection
        return cls(parts.hostname, parts.port,  # type: ignore[arg-type]
                   timeout=self.settings.upstream_timeout)

    def forward(self, method: str, path: str, body: bytes | None,
                headers: dict[str, str]) -> tuple[Exchange, http.client.HTTPResponse]:
        """The upstream's response (its head read); the exchange bounds what follows."""
        exchange = Exchange(self._connection(), self.settings.upstream_timeout)
        try:
            return exchange, exchange.open(method, self.upstream.path + path, body, headers)
        except (OSError, http.client.HTTPException, UpstreamError) as exc:
            exchange.conn.close()
            raise ProxyError(502, f"the upstream {self.settings.upstream} did not answer: "
                                  f"{type(exc).__name__} {exc}", "upstream_unavailable"
                             ) from None

    @staticmethod
    def read(exchange: Exchange, resp: http.client.HTTPResponse) -> bytes:
        try:
            return exchange.read(resp)
        except UpstreamError as exc:
            raise ProxyError(502, str(exc), "upstream_error") from None

    # -- memory --------------------------------------------------------------------
    def recall(self, body: dict[str, Any], session: str) -> tuple[str, list[dict[str, Any]]]:
        query = latest_user_text(body.get("messages"))
        top_k = number(body, "memory_top_k", int)
        if top_k is None:
            top_k = self.settings.top_k
        if not query or not query.strip() or (top_k is not None and top_k <= 0):
            return "", []
        params: dict[str, Any] = {"query": query.strip()[:MAX_QUERY], "session": session}
        if self.settings.token_budget is not None:
            params["token_budget"] = self.settings.token_budget
        if top_k is not None:
            params["top_k"] = min(top_k, 100)
        for field, name in (("memory_recency_weight", "recency_weight"),
                            ("memory_score_threshold", "score_threshold")):
            value = number(body, field, float)
            if value is not None:
                params[name] = value
        try:
            result = self.memory.call("memory_recall", params)
        except RpcFailure as exc:
            raise ProxyError(400, f"memory: {exc.message}", "invalid_request_error") from None
        return result["text"], result["memories"]

    def remember_later(self, session: str, user: str | None, assistant: str | None) -> None:
        """Both turns to memory_remember, off the reply's path."""
        def run() -> None:
            try:
                for role, text in (("user", user), ("assistant", assistant)):
                    if text and text.strip():
                        self.memory.call("memory_remember", {
                            "session": session, "role": role, "content": text[:MAX_TURN]})
            except (ProxyError, RpcFailure) as exc:
                print(f"memoryctl proxy: remembering the turns failed: {exc}",
                      file=sys.stderr)
            finally:
                self.remembering.discard(thread)

        thread = threading.Thread(target=run, daemon=True)
        self.remembering.add(thread)
        thread.start()

    def wait_remembered(self, timeout: float = 30.0) -> None:
        for thread in list(self.remembering):
            thread.join(timeout)


def make_handler(proxy: Proxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BoundedHandler):
        server_version = "memoryd-proxy"

        def log_message(self, format: str, *args: Any) -> None:
            if not proxy.settings.quiet:
                sys.stderr.write(f"memoryctl proxy: {format % args}\n")

        def _send(self, status: int, body: bytes, content_type: str = "application/json"
                  ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _auth(self) -> dict[str, str]:
            headers = {}
            for name in ("Authorization", "OpenAI-Organization", "OpenAI-Project"):
                if self.headers.get(name):
                    headers[name] = self.headers[name]
            return headers

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0].rstrip("/")
            if path == "/health":
                up = proxy.memory.up()
                self._send(200 if up else 503, json.dumps({
                    "status": "ok" if up else "degraded",
                    "memoryd": "up" if up else "down", "upstream": proxy.settings.upstream,
                }).encode())
                return
            if path == "/v1/models":
                try:
                    exchange, resp = proxy.forward("GET", "/models", None, self._auth())
                except ProxyError as exc:
                    self._send(exc.status, exc.body())
                    return
                with contextlib.closing(exchange.conn):
                    try:
                        data = proxy.read(exchange, resp)
                    except ProxyError as exc:
                        self._send(exc.status, exc.body())
                        return
                    self._send(resp.status, data,
                               resp.getheader("Content-Type", "application/json"))
                return
            self._send(404, ProxyError(404, f"no route {path}: this proxy serves "
                                            "/v1/chat/completions, /v1/models and /health",
                                       "not_found").body())

        def do_POST(self) -> None:
            path = self.path.split("?", 1)[0].rstrip("/")
            try:
                try:
                    data = self.read_body(MAX_BODY, required=True)
                except BodyError as exc:
                    raise ProxyError(exc.status, exc.message, "invalid_request_error"
                                     ) from None
                if path != "/v1/chat/completions":
                    raise ProxyError(404, f"no route {path}", "not_found")
                self._chat(data)
            except ProxyError as exc:
                self._send(exc.status, exc.body())

        def _chat(self, data: bytes) -> None:
            body = parse_body(data)
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                raise ProxyError(400, "a chat request needs `messages` (a list)",
                                 "invalid_request_error")
            session = session_of(body, self.headers.get("X-Memory-Id"))
            block, hits = proxy.recall(body, session)
            forwarded = {k: v for k, v in body.items() if k not in MEMORY_FIELDS}
            if block:
                forwarded["messages"] = inject(body["messages"], block)
            headers = {"Content-Type": "application/json", **self._auth(),
                       "Accept": self.headers.get("Accept", "application/json")}
            exchange, resp = proxy.forward("POST", "/chat/completions",
                                       json.dumps(forwarded).encode(), headers)
            user = latest_user_text(body["messages"])
            with contextlib.closing(exchange.conn):
                content_type = resp.getheader("Content-Type", "application/json")
                if resp.status >= 300:  # the upstream's error, as it gave it
                    self._send(resp.status, proxy.read(exchange, resp), content_type)
                    return
                if "text/event-stream" in content_type:
                    assistant = self._stream(exchange, resp, content_type)
                else:
                    assistant = self._whole(proxy.read(exchange, resp), resp, content_type, hits)
            proxy.remember_later(session, user, assistant)

        def _whole(self, data: bytes, resp: http.client.HTTPResponse, content_type: str,
                   hits: list[dict[str, Any]]) -> str | None:
            try:
                reply = json.loads(data)
                assistant = reply["choices"][0]["message"].get("content")
            except (ValueError, KeyError, IndexError, TypeError, AttributeError,
                    RecursionError):
                self._send(resp.status, data, content_type)  # not ours to judge
                return None
            reply["memory_hits"] = [
                {"id": m["id"], "role": m.get("role"), "content": m["content"],
                 "created_at": m["created_at"], "score": m.get("score")} for m in hits]
            self._send(resp.status, json.dumps(reply).encode(), "application/json")
            return assistant if isinstance(assistant, str) else None

        def _stream(self, exchange: Exchange, resp: http.client.HTTPResponse,
                    content_type: str) -> str:
            """Copy the upstream's SSE lines to the caller as they come (chunked); keep
            at most MAX_TURN characters of the text to remember."""
            self.send_response(resp.status)
            self.send_header("Content-Type", content_type)
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            text: list[str] = []
            kept = 0
            try:
                for line, added in sse_text(exchange.lines(resp)):
                    if added and kept < MAX_TURN:
                        text.append(added[:MAX_TURN - kept])
                        kept += len(text[-1])
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            except UpstreamError as exc:  # the caller has the lines so far; then it ends
                print(f"memoryctl proxy: the stream ended early: {exc}", file=sys.stderr)
                self.close_connection = True
            except OSError:  # the caller went away: keep what was said so far
                self.close_connection = True
            return "".join(text)

    return Handler


def run(settings: Settings, listen: str) -> int:
    host, port = parse_listen(listen)
    proxy = Proxy(settings)
    server = bind(host, port, make_handler(proxy))
    bound = server.server_address
    if host not in LOOPBACK:
        print(f"memoryctl proxy: listening on {host}, not only this machine: anyone who "
              "reaches it can read your memories through it", file=sys.stderr)
    print(f"memoryctl proxy: http://{bound[0]}:{bound[1]}/v1 -> {settings.upstream} "
          f"(memory: {settings.socket_path})", file=sys.stderr, flush=True)
    try:
        serve_until_interrupted(server)
    finally:
        proxy.wait_remembered(10)
    return 0
