"""ChatClient: one OpenAI-compatible `POST {url}/chat/completions`, stdlib HTTP.

Only configured endpoints are called (llm.url; nothing by default). Every failure
(refused, timed out, HTTP error, not JSON, no answer) is an `LlmError`, and each
caller has a deterministic fallback, so memoryd works the same without a model.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any

import msgspec
import structlog
import trio

from memoryd.config import LlmConfig

log = structlog.get_logger("memoryd.llm")


class LlmError(Exception):
    """The endpoint gave no usable answer; the message says why."""


class _Message(msgspec.Struct):
    content: str | None = None


class _Choice(msgspec.Struct):
    message: _Message


class _ChatResponse(msgspec.Struct):
    choices: list[_Choice]


class ChatClient:
    def __init__(self, config: LlmConfig) -> None:
        if not config.url:
            raise ValueError("llm.url is not set")
        self.config = config
        self.endpoint = config.url.rstrip("/") + "/chat/completions"
        self.calls = 0
        self.failures = 0

    def complete(self, system: str, user: str, max_tokens: int = 512) -> str:
        """The model's answer to one system + user message (blocking)."""
        body = {"model": self.config.model, "temperature": 0, "max_tokens": max_tokens,
                "messages": [{"role": "system", "content": system},
                             {"role": "user", "content": user}]}
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.config.api_key_env) if self.config.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(self.endpoint, data=json.dumps(body).encode(),
                                         headers=headers, method="POST")
        self.calls += 1
        try:
            with urllib.request.urlopen(request, timeout=self.config.timeout) as response:
                data = response.read()
            answer = msgspec.json.decode(data, type=_ChatResponse)
        except urllib.error.HTTPError as exc:
            raise self._failed(f"HTTP {exc.code} from {self.endpoint}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise self._failed(f"cannot reach {self.endpoint}: {reason}") from None
        except msgspec.DecodeError as exc:
            raise self._failed(f"not a chat completion: {exc}") from None
        if not answer.choices or not answer.choices[0].message.content:
            raise self._failed("the answer was empty")
        return answer.choices[0].message.content

    async def ask(self, system: str, user: str, max_tokens: int = 512) -> str:
        return await trio.to_thread.run_sync(self.complete, system, user, max_tokens,
                                             abandon_on_cancel=True)

    async def ask_json(self, system: str, user: str, max_tokens: int = 512) -> dict[str, Any]:
        """The first JSON object in the answer; an answer without one is a failure."""
        answer = await self.ask(system, user, max_tokens)
        try:
            return json_object(answer)
        except LlmError as exc:
            raise self._failed(str(exc)) from None

    def _failed(self, why: str) -> LlmError:
        self.failures += 1
        log.warning("llm.failed", endpoint=self.endpoint, error=why)
        return LlmError(why)


def json_object(text: str) -> dict[str, Any]:
    """The first JSON object in a model's answer (models wrap JSON in prose and fences)."""
    start = text.find("{")
    while start != -1:
        try:
            value, _ = json.JSONDecoder().raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    raise LlmError("the answer holds no JSON object")
