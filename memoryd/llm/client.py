"""ChatClient: OpenAI-compatible `POST {url}/chat/completions`, stdlib HTTP.

The LLM contract (docs/jobs.md, "The LLM contract"): every call names its TASK, asks with
`temperature: 0` and `response_format: json_schema` (strict; dropped when
`llm.structured_output` is false, and the answer is then parsed out of fences or
prose), and expects one JSON object back. At most `llm.concurrency` calls are in
flight; a timeout, a refused connection, HTTP 429 or 5xx is retried `llm.retries`
times with backoff. Every failure is an `LlmError`, whatever the peer did (an answer
that never ends is cut at MAX_ANSWER bytes, a broken HTTP reply or a JSON nested past
reason is an error like any other), and each caller has a deterministic fallback, so
memoryd works the same without a model. `llm.timeout` bounds the whole call, not each
read (a server sending a byte a second would otherwise hold it for ever). A call never
holds a lock or a socket request: callers run it in the background.
"""

from __future__ import annotations

import http.client
import json
import os
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from typing import Any

import msgspec
import structlog
import trio

from memoryd.config import LlmConfig

log = structlog.get_logger("memoryd.llm")
BACKOFF = 0.5  # seconds before the first retry; doubled each time
MAX_ANSWER = 1 << 20  # bytes of a chat completion: far past what any task asks for


class LlmError(Exception):
    """The endpoint gave no usable answer; the message says why."""

    def __init__(self, why: str, retry: bool = False) -> None:
        super().__init__(why)
        self.retry = retry


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
        self.last_error: dict[str, str] | None = None  # {at, task, error}: for status
        self._limiter: trio.CapacityLimiter | None = None

    @property
    def limiter(self) -> trio.CapacityLimiter:
        if self._limiter is None:  # made inside trio (the client is built before it runs)
            self._limiter = trio.CapacityLimiter(self.config.concurrency)
        return self._limiter

    def complete(self, system: str, user: str, max_tokens: int = 512,
                 response_format: dict[str, Any] | None = None) -> str:
        """The model's answer to one system + user message (blocking, one attempt)."""
        body: dict[str, Any] = {
            "model": self.config.model, "temperature": 0, "max_tokens": max_tokens,
            "messages": [{"role": "system", "content": system},
                         {"role": "user", "content": user}]}
        if response_format is not None:
            body["response_format"] = response_format
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.config.api_key_env) if self.config.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(self.endpoint, data=json.dumps(body).encode(),
                                         headers=headers, method="POST")
        self.calls += 1
        deadline = time.monotonic() + self.config.timeout
        try:
            with urllib.request.urlopen(request, timeout=self.config.timeout) as response:
                data = _read_capped(response, deadline)
            answer = msgspec.json.decode(data, type=_ChatResponse)
        except urllib.error.HTTPError as exc:
            raise LlmError(f"HTTP {exc.code} from {self.endpoint}",
                           retry=exc.code == 429 or exc.code >= 500) from None
        except (urllib.error.URLError, TimeoutError, OSError,
                http.client.HTTPException) as exc:  # IncompleteRead, BadStatusLine, ...
            reason = getattr(exc, "reason", None) or exc
            raise LlmError(f"cannot reach {self.endpoint}: {type(exc).__name__} {reason}",
                           retry=True) from None
        except (msgspec.DecodeError, RecursionError) as exc:
            raise LlmError(f"not a chat completion: {exc}") from None
        if not answer.choices or not answer.choices[0].message.content:
            raise LlmError("the answer was empty")
        return answer.choices[0].message.content

    async def ask_task(self, task: str, schema: dict[str, Any], system: str, user: str,
                       max_tokens: int = 512) -> dict[str, Any]:
        """The JSON object the model answers for TASK (retried, limited, logged)."""
        response_format = ({"type": "json_schema", "json_schema": {
            "name": task, "schema": schema, "strict": True}}
            if self.config.structured_output else None)
        delay = BACKOFF
        for attempt in range(self.config.retries + 1):
            try:
                async with self.limiter:
                    # The whole call's deadline (the thread's reads end soon after:
                    # each is bounded by the same timeout, the answer by MAX_ANSWER).
                    with trio.move_on_after(self.config.timeout + 1) as late:
                        answer = await trio.to_thread.run_sync(
                            self.complete, system, user, max_tokens, response_format,
                            abandon_on_cancel=True)
                    if late.cancelled_caught:
                        raise LlmError(f"no answer within llm.timeout "
                                       f"({self.config.timeout:g} s)", retry=True)
                return json_object(answer)
            except LlmError as exc:
                if not exc.retry or attempt == self.config.retries:
                    self.failures += 1
                    self.last_error = {"at": datetime.now(UTC).isoformat(), "task": task,
                                       "error": str(exc)[:500]}
                    log.warning("llm.failed", task=task, endpoint=self.endpoint,
                                error=str(exc), attempts=attempt + 1)
                    raise
                log.info("llm.retrying", task=task, error=str(exc), in_s=delay)
                await trio.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")


def _read_capped(response: Any, deadline: float) -> bytes:
    """The body, read a block at a time until the deadline, and at most MAX_ANSWER."""
    chunks, size = [], 0
    while block := response.read1(65536):  # what arrived: a drip meets the deadline
        chunks.append(block)
        size += len(block)
        if size > MAX_ANSWER:
            raise LlmError(f"the answer is over {MAX_ANSWER} bytes: cut off")
        if time.monotonic() > deadline:
            raise LlmError("the answer did not arrive within llm.timeout", retry=True)
    return b"".join(chunks)


def json_object(text: str) -> dict[str, Any]:
    """The first JSON object in a model's answer (models wrap JSON in prose and fences)."""
    start = text.find("{")
    while start != -1:
        try:
            value, _ = json.JSONDecoder().raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        except RecursionError:
            raise LlmError("the answer's JSON is nested past reason") from None
        if isinstance(value, dict):
            try:  # json reads "\udcff" as a lone surrogate, which no memory can hold
                msgspec.json.encode(value)
            except UnicodeEncodeError:
                raise LlmError("the answer's JSON holds text that is not valid Unicode "
                               "(a lone surrogate)") from None
            return value
        start = text.find("{", start + 1)
    raise LlmError("the answer holds no JSON object")
