"""`memoryctl proxy` as a process, driven by the official `openai` package against a
scripted OpenAI-compatible upstream on 127.0.0.1, with a real daemon behind it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request

import openai
import pytest

from tests.e2e.test_lifecycle import wait_for
from tests.llm_server import ScriptedLlm, completion


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ProxyProcess:
    def __init__(self, daemon, upstream: str, *options: str) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ, MEMORY_HOME=str(daemon.root))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memoryctl", "proxy", "--upstream", upstream,
             "--listen", f"127.0.0.1:{self.port}", "--quiet", *options],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait_for(self._answers, 60, "the proxy to listen")

    def _answers(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"the proxy exited: {self.proc.stderr.read()}")
        try:
            urllib.request.urlopen(self.url + "/health", timeout=5).close()
        except urllib.error.HTTPError:
            return True  # it answers (503 while the daemon is down)
        except OSError:
            return False
        return True

    def health(self) -> tuple[int, dict]:
        try:
            with urllib.request.urlopen(self.url + "/health", timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


def _answer(request: dict) -> tuple[int, str]:
    system = "\n".join(m["content"] for m in request["messages"] if m["role"] == "system")
    question = request["messages"][-1]["content"]
    if "rate limit me" in question:
        return 429, json.dumps({"error": {"message": "slow down", "type": "rate_limit"}})
    if "name" in question and "?" in question:
        return completion("Your name is Alice." if "Alice" in system else "I don't know.")
    return completion("Nice to meet you! Hiking is great.")


@pytest.fixture
def upstream():
    with ScriptedLlm(_answer) as llm:
        yield llm


@pytest.fixture
def proxy(daemon, upstream):
    p = ProxyProcess(daemon, upstream.url)
    yield p
    p.stop()


def _client(proxy: ProxyProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0)


def test_the_seed_conversation_is_remembered_and_injected(daemon, upstream, proxy):
    client = _client(proxy)
    first = client.chat.completions.create(
        model="scripted", messages=[{"role": "user",
                                     "content": "My name is Alice and I love hiking"}],
        extra_body={"memory_id": "alice"})
    assert first.choices[0].message.content == "Nice to meet you! Hiking is great."
    assert first.model_extra["memory_hits"] == []  # nothing known yet
    assert upstream.requests[0]["headers"]["Authorization"] == "Bearer sk-test"
    assert "memory_id" not in upstream.requests[0]["body"]  # ours, not the upstream's
    # both turns reach memory_remember after the reply
    wait_for(lambda: daemon.call("memory_list", {"scope": "global"})["total"] >= 2, 30,
             "both turns remembered")
    wait_for(lambda: daemon.call("stats")["backlog"] == 0, 60, "background learning")

    stream = client.chat.completions.create(
        model="scripted", messages=[{"role": "user", "content": "What's my name?"}],
        stream=True, extra_headers={"X-Memory-Id": "alice"})
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream
                   if chunk.choices)
    assert text == "Your name is Alice."
    shown = upstream.requests[-1]["body"]["messages"]
    assert shown[0]["role"] == "system" and shown[0]["content"].startswith("<memory>")
    assert "Alice" in shown[0]["content"] and shown[-1]["content"] == "What's my name?"
    assert upstream.requests[-1]["body"]["stream"] is True
    wait_for(lambda: daemon.call("memory_search", {"query": "Your name is Alice"})["total"],
             30, "the streamed answer remembered")
    turns = daemon.call("memory_list", {"scope": "global", "limit": 10})["memories"]
    assert {m["session"] for m in turns if m["kind"] == "turn"} == {"alice"}

    # non-streaming replies carry what was recalled
    again = client.chat.completions.create(
        model="scripted", messages=[{"role": "user", "content": "What's my name?"}],
        extra_body={"memory_id": "alice", "memory_top_k": 3})
    hits = again.model_extra["memory_hits"]
    assert hits and any("Alice" in h["content"] for h in hits)
    assert {"id", "role", "content", "created_at", "score"} <= set(hits[0])


def test_models_health_errors_and_a_stopped_daemon(daemon, upstream, proxy):
    client = _client(proxy)
    assert [m.id for m in client.models.list()] == ["scripted"]
    assert proxy.health() == (200, {"status": "ok", "memoryd": "up",
                                    "upstream": upstream.url})
    with pytest.raises(openai.RateLimitError) as info:  # the upstream's own status
        client.chat.completions.create(
            model="scripted", messages=[{"role": "user", "content": "rate limit me"}])
    assert info.value.status_code == 429 and "slow down" in str(info.value)
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="scripted", messages=[
            {"role": "user", "content": "x"}], extra_body={"memory_top_k": "many"})

    daemon.stop()
    with pytest.raises(openai.APIStatusError) as info:
        client.chat.completions.create(
            model="scripted", messages=[{"role": "user", "content": "hello?"}])
    assert info.value.status_code == 503
    assert "memoryd is not running" in info.value.message
    assert proxy.health()[0] == 503


def test_an_unreachable_upstream_is_a_502(daemon):
    p = ProxyProcess(daemon, f"http://127.0.0.1:{_free_port()}/v1")
    try:
        with pytest.raises(openai.APIStatusError) as info:
            _client(p).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "anyone there?"}])
        assert info.value.status_code == 502 and "did not answer" in info.value.message
    finally:
        p.stop()
