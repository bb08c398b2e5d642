"""An LLM endpoint that misbehaves on purpose, over a real socket on 127.0.0.1: every
failure is an LlmError (so every caller takes its fallback), an endless answer is cut
at MAX_ANSWER, and llm.timeout bounds the whole call, not each read."""

from __future__ import annotations

import json
import socket
import time

import pytest
import trio

from memoryd.config import parse_config
from memoryd.llm.client import MAX_ANSWER, ChatClient, LlmError
from tests.hostile_http import answer, endpoint
from tests.rig import Rig


def completion(content: str) -> bytes:
    return json.dumps({"choices": [{"message": {"content": content}}]}).encode()


def nested(conn: socket.socket) -> None:
    conn.sendall(answer(completion("{" + '"a": [' * 100_000 + "]" * 100_000 + "}")))


def endless(conn: socket.socket) -> None:
    conn.sendall(answer(b"", length=10 * MAX_ANSWER))
    block = b'{"choices": [' + b" " * 65536
    for _ in range(40):  # 2.6 MB, past the cap: the client must stop reading
        conn.sendall(block)


def drip(conn: socket.socket) -> None:
    conn.sendall(answer(b"", length=1000))
    for _ in range(200):  # 10 s of a byte every 50 ms: each read is quick
        conn.sendall(b" ")
        time.sleep(0.05)


def surrogate(conn: socket.socket) -> None:
    conn.sendall(answer(completion('{"facts": ["I live in \\udcff"]}')))


def incomplete(conn: socket.socket) -> None:
    conn.sendall(answer(b'{"choi', length=1000))


def bad_status(conn: socket.socket) -> None:
    conn.sendall(b"garbage, not HTTP\r\n\r\n")


@pytest.mark.parametrize("behaviour", [nested, endless, drip, surrogate, incomplete,
                                       bad_status])
async def test_every_hostile_answer_is_an_llm_error_within_the_timeout(behaviour):
    with endpoint(behaviour) as url:
        client = ChatClient(parse_config({"llm": {"url": url, "model": "m",
                                                  "timeout": "1s", "retries": 0}}).llm)
        with trio.fail_after(8):  # the drip alone would go on for 10 s
            with pytest.raises(LlmError):
                await client.ask_task("facts", {"type": "object"}, "system", "user")
    assert client.failures == 1 and client.last_error


async def test_memory_add_falls_back_when_the_model_answers_nonsense(tmp_path):
    with endpoint(nested) as url:
        rig = Rig(tmp_path, {"llm": {"url": url, "model": "m", "timeout": "2s",
                                     "retries": 0}})
        try:
            await rig.start()
            added = await rig.result("memory_add", text="I live in Boston")
            assert added["path"] == "heuristic" and added["facts"], added
        finally:
            rig.close()
