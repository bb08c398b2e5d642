"""`memoryctl proxy` as a process between hostile peers: an upstream that never stops
sending, or sends a byte at a time, and callers that send what HTTP allows but no
chat client would.

Bounds: whatever an upstream sends, the proxy's peak RSS grows by less than 64 MiB
(a whole reply is read to at most 32 MiB, an SSE line parsed to at most 1 MiB, a
streamed reply's text kept to 200,000 characters; before, 1.1-1.6 GB in 8 s), and
one exchange ends within its --timeout even when every read is quick."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.test_lifecycle import wait_for
from tests.e2e.test_proxy import ProxyProcess
from tests.hostile_http import answer, endpoint

MIB = 1024 * 1024
FLOOD = 40 * MIB  # past every cap of the proxy


def peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def flood(conn: socket.socket, head: bytes, unit: bytes) -> None:
    conn.sendall(head)
    block = unit * (65536 // len(unit))
    for _ in range(FLOOD // len(block)):
        conn.sendall(block)


def endless_reply(conn: socket.socket) -> None:
    flood(conn, answer(b"", length=100 * FLOOD), b" ")


SSE_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Connection: close\r\n\r\n")


def endless_line(conn: socket.socket) -> None:
    flood(conn, SSE_HEAD + b"data: ", b"x")


def endless_text(conn: socket.socket) -> None:
    delta = json.dumps({"choices": [{"delta": {"content": "word " * 20}}]})
    flood(conn, SSE_HEAD, f"data: {delta}\n\n".encode())
    conn.sendall(b"data: [DONE]\n\n")


def drip(conn: socket.socket) -> None:
    conn.sendall(answer(b"", length=1000))
    for _ in range(300):  # 15 s of a byte every 50 ms: no read ever waits long
        conn.sendall(b" ")
        time.sleep(0.05)


def post(url: str, body: dict, stream: bool = False) -> tuple[int, bytes]:
    data = json.dumps({"model": "m", "stream": stream, **body}).encode()
    request = urllib.request.Request(url + "/v1/chat/completions", data=data,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            received = b""
            while block := response.read(1 << 20):  # read as it comes; keep the tail
                received = (received + block)[-4096:]
            return response.status, received
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


ASK = {"messages": [{"role": "user", "content": "tell me everything"}], "memory_id": "h1"}


@pytest.mark.parametrize("behaviour, stream, status", [
    (endless_reply, False, 502), (endless_line, True, 200), (endless_text, True, 200)])
def test_an_upstream_that_never_stops_cannot_grow_the_proxy(daemon, behaviour, stream,
                                                            status):
    with endpoint(behaviour) as url:
        proxy = ProxyProcess(daemon, url, "--timeout", "60")
        try:
            before = peak_rss(proxy.proc.pid)
            got, tail = post(proxy.url, ASK, stream=stream)
            assert got == status, tail
            if status == 502:
                assert b"over 33554432 bytes" in tail
            grown = peak_rss(proxy.proc.pid) - before
            assert grown < 64 * MIB, f"the proxy's peak grew by {grown / MIB:.0f} MiB"
            if behaviour is endless_text:  # what is remembered of it is cut, not the stream
                wait_for(lambda: _assistant_turns(daemon), 60, "the assistant's turn")
                assert len(_assistant_turns(daemon)[0]["content"]) <= 200_000
        finally:
            proxy.stop()


def _assistant_turns(daemon) -> list[dict]:
    listed = daemon.call("memory_list", {"limit": 100})["memories"]
    return [m for m in listed if m.get("role") == "assistant" and m.get("session") == "h1"]


def test_the_model_list_is_capped_too(daemon):
    with endpoint(endless_reply) as url:
        proxy = ProxyProcess(daemon, url)
        try:
            with pytest.raises(urllib.error.HTTPError) as info:
                urllib.request.urlopen(proxy.url + "/v1/models", timeout=60)
            assert info.value.code == 502
        finally:
            proxy.stop()


def test_an_upstream_that_drips_meets_the_whole_exchange_deadline(daemon):
    with endpoint(drip) as url:
        proxy = ProxyProcess(daemon, url, "--timeout", "2")
        try:
            started = time.monotonic()
            status, body = post(proxy.url, ASK)
            took = time.monotonic() - started
        finally:
            proxy.stop()
    assert status == 502 and b"longer than 2 s" in body, body
    assert took < 10, f"the exchange lasted {took:.1f} s"


def raw(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(request)
        received = b""
        while chunk := s.recv(65536):
            received += chunk
            if b"\r\n\r\n" in received:
                head, _, rest = received.partition(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                if len(rest) >= length:
                    return received
        return received


def chat(body: bytes, length: int | None = None) -> bytes:
    return (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
            b"application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (len(body) if length is None else length, body))


MESSAGES = b'"messages": [{"role": "user", "content": "hi"}]'


@pytest.mark.parametrize("request_bytes, status, says", [
    (chat(b"{}", length=-1), 400, b"negative"),
    (chat(b"{" + MESSAGES + b', "memory_top_k": NaN}'), 400, b"NaN is not JSON"),
    (chat(b"{" + MESSAGES + b', "memory_top_k": 1e999}'), 400, b"finite number"),
    (chat(b'{"messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"), 400, b"nested"),
    (chat(b"{" + MESSAGES + b', "memory_id": "a b/../c", "memory_top_k": 0}'), 400,
     b"not a session name"),
    (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"0\r\n\r\n", 411, b"chunked"),
])
def test_a_request_no_chat_client_sends_gets_a_clear_answer(daemon, request_bytes, status,
                                                             says):
    with endpoint(lambda conn: None) as url:
        proxy = ProxyProcess(daemon, url)
        try:
            reply = raw(proxy.port, request_bytes)
            assert reply.startswith(b"HTTP/1.1 %d" % status), reply[:300]
            assert says in reply, reply[:600]
            assert proxy.health()[0] == 200, "the proxy still serves"
        finally:
            proxy.stop()


def test_idle_connections_past_the_limit_are_turned_away_and_the_rest_served(daemon):
    with endpoint(lambda conn: None) as url:
        proxy = ProxyProcess(daemon, url)
        held = []
        try:
            for _ in range(64):  # connections that say nothing hold every slot
                held.append(socket.create_connection(("127.0.0.1", proxy.port)))
            late = raw(proxy.port, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            assert late.startswith(b"HTTP/1.1 503") and b"server_busy" in late, late
            for s in held:
                s.close()
            wait_for(lambda: proxy.health()[0] == 200, 30, "a slot to be free")
        finally:
            for s in held:
                s.close()
            proxy.stop()
