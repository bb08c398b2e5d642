"""What a chat request and its reply say, read strictly: the latest user message, the
memory fields (`memory_id`, `memory_top_k`, ...), the memory block's place among the
messages, and the assistant text in an SSE stream."""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Iterator
from typing import Any

from memoryctl.main import load_tools
from memoryd_client.wire import strict_json


class ProxyError(Exception):
    """An answer the proxy gives itself: an HTTP status and an OpenAI-style error body."""

    def __init__(self, status: int, message: str, kind: str) -> None:
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind

    def body(self) -> bytes:
        return json.dumps({"error": {"message": self.message, "type": self.kind,
                                     "code": self.status}}).encode()


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


def number(body: dict[str, Any], name: str, kind: type) -> Any:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            not math.isfinite(value):
        raise ProxyError(400, f"{name} must be a finite number", "invalid_request_error")
    return kind(value)


def _session_rule() -> re.Pattern[str]:
    """A session name as memory_remember takes it (the tool table's own pattern)."""
    remember = next(t for t in load_tools() if t["name"] == "memory_remember")
    return re.compile(remember["params"]["properties"]["session"]["pattern"])


_SESSION = _session_rule()


def session_of(body: dict[str, Any], header: str | None) -> str:
    """The session the turns are remembered in, checked now: a name memory_remember
    would refuse is a 400, not a reply whose turns are silently lost."""
    session = body.get("memory_id") or header or "default"
    if not isinstance(session, str):
        raise ProxyError(400, "memory_id must be a string", "invalid_request_error")
    if not _SESSION.match(session):
        raise ProxyError(400, f"memory_id {session[:80]!r} is not a session name: letters, "
                         "digits and . _ : - (at most 128), starting with a letter or "
                         "digit", "invalid_request_error")
    return session


def parse_body(data: bytes) -> Any:
    """Strict JSON: no NaN or Infinity (the upstream would get them too)."""
    try:
        return strict_json(data)
    except RecursionError:
        raise ProxyError(400, "the body is nested too deeply", "invalid_request_error"
                         ) from None
    except ValueError as exc:
        raise ProxyError(400, f"the body is not JSON: {exc}", "invalid_request_error"
                         ) from None


def sse_text(lines: Iterator[tuple[bytes, bool]]) -> Iterator[tuple[bytes, str]]:
    """Each SSE line as it came, with the assistant text it adds (if any); a piece of
    an over-long line is passed on unread."""
    for line, whole in lines:
        added = ""
        if whole and line.startswith(b"data:"):
            data = line[5:].strip()
            if data and data != b"[DONE]":
                with contextlib.suppress(ValueError, AttributeError, IndexError, TypeError):
                    delta = json.loads(data)["choices"][0].get("delta") or {}
                    added = delta.get("content") or ""
        yield line, added
