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
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from memoryctl.serving import LOOPBACK, bind, parse_listen, serve_until_interrupted
from memoryd_client import ClientPool, DaemonUnavailable, RpcFailure

MEMORY_FIELDS = ("memory_id", "memory_top_k", "memory_recency_weight",
                 "memory_score_threshold")
MAX_BODY = 32 << 20  # a chat request larger than this is refused (413)
MAX_QUERY = 4096  # characters of the user message used as the recall query
UPSTREAM_TIMEOUT = 600.0


class ProxyError(Exception):
    """An answer the proxy gives itself: an HTTP status and an OpenAI-style error body."""

    def __init__(self, status: int, message: str, kind: str) -> None:
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind

    def body(self) -> bytes:
        return json.dumps({"error": {"message": self.message, "type": self.kind,
                                     "code": self.status}}).encode()


@dataclass
class Settings:
    upstream: str  # e.g. http://127.0.0.1:11434/v1
    socket_path: Path
    top_k: int | None = None  # the daemon's recall.top_k when None
    token_budget: int | None = None  # the daemon's recall.token_budget when None
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


def latest_user_text(messages: Any) -> str | None:
    """The text of the last user message (string content, or its text parts)."""
    if not isinstance(messages, list):
        return None
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            parts = [p.get("text", "") for p in content
                     if isinstance(p, dict) and p.get("type") == "text"]
            return "\n".join(t for t in parts if isinstance(t, str))
        return None
    return None


def inject(messages: list[Any], block: str) -> list[Any]:
    """The messages with the memory block as a system message after the leading system
    messages (the caller's own instructions stay first)."""
    at = 0
    while at < len(messages) and isinstance(messages[at], dict) and \
            messages[at].get("role") in ("system", "developer"):
        at += 1
    return [*messages[:at], {"role": "system", "content": block}, *messages[at:]]


def _number(body: dict[str, Any], name: str, kind: type) -> Any:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ProxyError(400, f"{name} must be a number", "invalid_request_error")
    return kind(value)


class Proxy:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.memory = Memory(settings.socket_path)
        parts = urlsplit(settings.upstream.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"--upstream must be an http(s) URL, not {settings.upstream!r}")
        self.upstream = parts
        self.remembering: set[threading.Thread] = set()

    # -- upstream ------------------------------------------------------------------
    def _connection(self) -> http.client.HTTPConnection:
        parts = self.upstream
        cls = http.client.HTTPSConnection if parts.scheme == "https" else \
            http.client.HTTPConnection
        return cls(parts.hostname, parts.port, timeout=UPSTREAM_TIMEOUT)  # type: ignore[arg-type]

    def forward(self, method: str, path: str, body: bytes | None,
                headers: dict[str, str]) -> tuple[http.client.HTTPConnection,
                                                  http.client.HTTPResponse]:
        conn = self._connection()
        try:
            conn.request(method, self.upstream.path + path, body=body, headers=headers)
            return conn, conn.getresponse()
        except OSError as exc:
            conn.close()
            raise ProxyError(502, f"the upstream {self.settings.upstream} did not answer: "
                                  f"{exc}", "upstream_unavailable") from None

    # -- memory --------------------------------------------------------------------
    def recall(self, body: dict[str, Any], session: str) -> tuple[str, list[dict[str, Any]]]:
        query = latest_user_text(body.get("messages"))
        top_k = _number(body, "memory_top_k", int)
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
            value = _number(body, field, float)
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
                            "session": session, "role": role, "content": text[:200_000]})
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


def _session(body: dict[str, Any], header: str | None) -> str:
    session = body.get("memory_id") or header or "default"
    if not isinstance(session, str):
        raise ProxyError(400, "memory_id must be a string", "invalid_request_error")
    return session


def sse_text(lines: Iterator[bytes]) -> Iterator[tuple[bytes, str]]:
    """Each SSE line as it came, with the assistant text it adds (if any)."""
    for line in lines:
        added = ""
        if line.startswith(b"data:"):
            data = line[5:].strip()
            if data and data != b"[DONE]":
                with contextlib.suppress(ValueError, AttributeError, IndexError, TypeError):
                    delta = json.loads(data)["choices"][0].get("delta") or {}
                    added = delta.get("content") or ""
        yield line, added


def make_handler(proxy: Proxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
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
                    conn, resp = proxy.forward("GET", "/models", None, self._auth())
                except ProxyError as exc:
                    self._send(exc.status, exc.body())
                    return
                with contextlib.closing(conn):
                    self._send(resp.status, resp.read(),
                               resp.getheader("Content-Type", "application/json"))
                return
            self._send(404, ProxyError(404, f"no route {path}: this proxy serves "
                                            "/v1/chat/completions, /v1/models and /health",
                                       "not_found").body())

        def do_POST(self) -> None:
            path = self.path.split("?", 1)[0].rstrip("/")
            try:
                if path != "/v1/chat/completions":
                    raise ProxyError(404, f"no route {path}", "not_found")
                self._chat()
            except ProxyError as exc:
                self._send(exc.status, exc.body())

        def _read_body(self) -> dict[str, Any]:
            try:
                length = int(self.headers.get("Content-Length", ""))
            except ValueError:
                raise ProxyError(411, "a Content-Length is required",
                                 "invalid_request_error") from None
            if length > MAX_BODY:
                raise ProxyError(413, "the request is too large", "invalid_request_error")
            try:
                body = json.loads(self.rfile.read(length))
            except ValueError:
                raise ProxyError(400, "the body is not JSON", "invalid_request_error") from None
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                raise ProxyError(400, "a chat request needs `messages` (a list)",
                                 "invalid_request_error")
            return body

        def _chat(self) -> None:
            body = self._read_body()
            session = _session(body, self.headers.get("X-Memory-Id"))
            block, hits = proxy.recall(body, session)
            forwarded = {k: v for k, v in body.items() if k not in MEMORY_FIELDS}
            if block:
                forwarded["messages"] = inject(body["messages"], block)
            headers = {"Content-Type": "application/json", **self._auth(),
                       "Accept": self.headers.get("Accept", "application/json")}
            conn, resp = proxy.forward("POST", "/chat/completions",
                                       json.dumps(forwarded).encode(), headers)
            user = latest_user_text(body["messages"])
            with contextlib.closing(conn):
                content_type = resp.getheader("Content-Type", "application/json")
                if resp.status >= 300:  # the upstream's error, as it gave it
                    self._send(resp.status, resp.read(), content_type)
                    return
                if "text/event-stream" in content_type:
                    assistant = self._stream(resp, content_type)
                else:
                    assistant = self._whole(resp, content_type, hits)
            proxy.remember_later(session, user, assistant)

        def _whole(self, resp: http.client.HTTPResponse, content_type: str,
                   hits: list[dict[str, Any]]) -> str | None:
            data = resp.read()
            try:
                reply = json.loads(data)
                assistant = reply["choices"][0]["message"].get("content")
            except (ValueError, KeyError, IndexError, TypeError, AttributeError):
                self._send(resp.status, data, content_type)  # not ours to judge
                return None
            reply["memory_hits"] = [
                {"id": m["id"], "role": m.get("role"), "content": m["content"],
                 "created_at": m["created_at"], "score": m.get("score")} for m in hits]
            self._send(resp.status, json.dumps(reply).encode(), "application/json")
            return assistant if isinstance(assistant, str) else None

        def _stream(self, resp: http.client.HTTPResponse, content_type: str) -> str:
            """Copy the upstream's SSE lines to the caller as they come (chunked)."""
            self.send_response(resp.status)
            self.send_header("Content-Type", content_type)
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            text: list[str] = []

            def lines() -> Iterator[bytes]:
                while line := resp.readline():
                    yield line

            try:
                for line, added in sse_text(lines()):
                    text.append(added)
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
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
