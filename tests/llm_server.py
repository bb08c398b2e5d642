"""A scripted OpenAI-compatible endpoint on 127.0.0.1 for tests.

`answer(request_json) -> (status, body)` decides each reply (a request with
`stream: true` gets the completion's message as SSE chunks); every request is kept in
`requests` (path, headers, JSON body); `GET /v1/models` lists one model. The
production client talks to it over real HTTP, exactly as it would to Ollama or OpenAI.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[dict[str, Any]], tuple[int, str]]


def completion(content: str) -> tuple[int, str]:
    """A well-formed chat completion whose message is `content`."""
    return 200, json.dumps({"id": "chatcmpl-test", "object": "chat.completion",
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant",
                                                     "content": content}}]})


class ScriptedLlm:
    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "headers": dict(self.headers),
                                        "body": body})
                status, text = server.answer(body)
                if status == 200 and body.get("stream"):
                    self._stream(text)
                    return
                self._send(status, text.encode(), "application/json")

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, json.dumps({"object": "list", "data": [
                        {"id": "scripted", "object": "model", "created": 0,
                         "owned_by": "tests"}]}).encode(), "application/json")
                else:
                    self._send(404, b'{"error": {"message": "no such route"}}',
                               "application/json")

            def _send(self, status: int, data: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, text: str) -> None:
                """The completion's message as SSE chunks of a few characters each."""
                content = json.loads(text)["choices"][0]["message"]["content"]
                events = [{"id": "chatcmpl-test", "object": "chat.completion.chunk",
                           "created": 0, "model": "scripted", "choices": [
                               {"index": 0, "delta": {"role": "assistant", "content": ""},
                                "finish_reason": None}]}]
                events += [{"id": "chatcmpl-test", "object": "chat.completion.chunk",
                            "created": 0, "model": "scripted", "choices": [
                                {"index": 0, "delta": {"content": content[i:i + 4]},
                                 "finish_reason": None}]}
                           for i in range(0, len(content), 4)]
                events.append({"id": "chatcmpl-test", "object": "chat.completion.chunk",
                               "created": 0, "model": "scripted", "choices": [
                                   {"index": 0, "delta": {}, "finish_reason": "stop"}]})
                data = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
                data += b"data: [DONE]\n\n"
                self._send(200, data, "text/event-stream")

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedLlm:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def numbered(prompt: str) -> dict[str, str]:
    """number -> memory text, from a classification prompt."""
    out = {}
    for block in prompt.split("\n\n"):
        number, _, text = block.partition(". ")
        out[number] = text
    return out
