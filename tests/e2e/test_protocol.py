"""The wire: framing, every error code, pipelining, MCP shapes, notifications."""

from __future__ import annotations

import json
import socket
import time

import pytest

from memoryd.errors import ERROR_CODES
from memoryd.tools.spec import SPECS
from memoryd_client import Client, DaemonUnavailable, RpcFailure


def raw(daemon) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(30)
    sock.connect(str(daemon.socket))
    return sock


def read_lines(sock: socket.socket, n: int) -> list[dict]:
    buf = b""
    while buf.count(b"\n") < n:
        chunk = sock.recv(1 << 16)
        assert chunk, f"connection closed after {len(buf.splitlines())} lines"
        buf += chunk
    return [json.loads(line) for line in buf.split(b"\n")[:n]]


def test_every_error_code_over_the_wire(make_daemon):
    d = make_daemon(config="server:\n  max_connections: 2\n").start()
    sock = raw(d)

    def rpc(method: str, params: dict) -> dict:
        sock.sendall(json.dumps({"id": "t", "method": method, "params": params}).encode()
                     + b"\n")
        return read_lines(sock, 1)[0]

    def only_this_connection() -> bool:  # the readiness probe's close may still be in flight
        return rpc("health", {})["result"]["connections"] == 1

    deadline = time.monotonic() + 10
    while not only_this_connection():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    mid = rpc("memory_write", {"content": "x", "category": "knowledge"})["result"]["id"]
    lines = [
        b"not json at all",
        b'{"id": 2, "method": 5}',
        b"[1, 2]",
        b'{"id": 3, "method": "memory_forget_everything"}',
        b'{"id": 4, "method": "memory_read", "params": {"idd": "x"}}',
        b'{"id": 5, "method": "memory_read", "params": {"id": "nope"}}',
        b'{"id": 6, "method": "memory_update", "params": {"id": "%s", "version": 9}}' % (
            mid.encode()),
        b'{"id": 7, "method": "initialize", "params": {"clientInfo": {"name": "bot"}}}',
        b'{"id": 8, "method": "memory_list", "params": {"scope": "agent:other"}}',
        b'{"id": 9, "method": "tools/call", "params": {"name": "nope", "arguments": {}}}',
        b'{"id": 10, "method": "memory_read", "params": [1]}',
        b'{"id": 11, "jsonrpc": "1.0", "method": "health"}',
    ]
    sock.sendall(b"\n".join(lines) + b"\n")
    replies = read_lines(sock, len(lines))
    codes = [r.get("error", {}).get("code") for r in replies]
    assert codes == [-32700, -32600, -32600, -32601, -32602, -32001, -32002, None, -32003,
                     -32601, -32602, -32600]
    assert [r["id"] for r in replies] == [None, 2, None, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    assert "params.idd" in replies[4]["error"]["message"]
    assert "object" in replies[10]["error"]["message"]
    # -32004: a line over 1 MiB, then the same connection keeps working
    sock.sendall(b'{"id": 12, "method": "memory_write", "params": {"content": "'
                 + b"a" * (2 << 20) + b'"}}\n{"id": 13, "method": "ping"}\n')
    too_large, pong = read_lines(sock, 2)
    assert too_large["error"]["code"] == -32004 and pong == {"jsonrpc": "2.0", "id": 13,
                                                              "result": {}}
    # -32005: over max_connections (2: this one and one more)
    second = raw(d)
    second.sendall(b'{"id": 1, "method": "ping"}\n')
    assert read_lines(second, 1)[0]["result"] == {}  # accepted and counted
    third = raw(d)
    extra = [second, third]
    busy = read_lines(third, 1)[0]
    assert busy["error"]["code"] == -32005
    assert {-32700, -32600, -32601, -32602, -32001, -32002, -32003, -32004, -32005} <= set(
        ERROR_CODES)
    sock.close()
    for s in extra:
        s.close()
    deadline = time.monotonic() + 10
    while True:  # the daemon notices the closed connections in a moment
        try:
            listed = d.call("memory_list", {})
            break
        except (RpcFailure, OSError, DaemonUnavailable):
            assert time.monotonic() < deadline
            time.sleep(0.05)
    assert listed["total"] == 1, "nothing was written by the bad lines"


def test_notifications_get_no_reply_and_jsonrpc_may_be_omitted(daemon):
    sock = raw(daemon)
    sock.sendall(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n'
                 b'{"method": "memory_read", "params": {"id": "../x"}}\n'
                 b'{"method": "ping", "id": "abc"}\n')
    (reply,) = read_lines(sock, 1)
    assert reply == {"jsonrpc": "2.0", "id": "abc", "result": {}}


def test_pipelined_requests_are_answered_in_order(daemon):
    sock = raw(daemon)
    n = 300
    batch = []
    for i in range(n):
        if i % 3 == 0:
            batch.append({"id": i, "method": "memory_write",
                          "params": {"content": f"pipelined note {i}"}})
        elif i % 3 == 1:
            batch.append({"id": i, "method": "memory_search", "params": {"query": "pipelined"}})
        else:
            batch.append({"id": i, "method": "health"})
    sock.sendall(b"".join(json.dumps(r).encode() + b"\n" for r in batch))
    replies = read_lines(sock, n)
    assert [r["id"] for r in replies] == list(range(n))
    assert all("result" in r for r in replies)
    # a search sees every write pipelined before it on the same connection
    for i in range(1, n, 3):
        assert replies[i]["result"]["total"] == (i + 2) // 3


def test_tools_list_and_tools_call_follow_mcp(daemon):
    with daemon.client() as c:
        init = c.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "test-host", "version": "0"}})
        assert init["serverInfo"]["name"] == "memoryd"
        assert init["capabilities"] == {"tools": {"listChanged": False},
                                        "prompts": {"listChanged": False}}
        tools = c.call("tools/list")["tools"]
        assert [t["name"] for t in tools] == list(SPECS)
        for t in tools:
            assert t["description"] and t["inputSchema"]["type"] == "object"
            assert t["inputSchema"]["additionalProperties"] is False
        write = next(t for t in tools if t["name"] == "memory_write")
        assert write["inputSchema"]["required"] == ["content"]
        result = c.call("tools/call", {"name": "memory_write",
                                       "arguments": {"content": "via tools/call"}})
        assert result["isError"] is False
        assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
        assert result["structuredContent"]["scope"] == "global"  # agents share by default
        assert init["agent"] == "agent:test-host"
        legacy = c.call("tools/call", {"name": "memory_search", "params": {"query": "via"}})
        assert legacy["structuredContent"]["total"] == 1
        # a tool that fails answers a result with isError, for the model to read
        failed = c.call("tools/call", {"name": "memory_search", "arguments": {"query": 3}})
        assert failed["isError"] is True and "structuredContent" not in failed
        assert "params.arguments.query" in failed["content"][0]["text"]
        assert failed["_meta"]["memoryd/error"]["code"] == -32602
        with pytest.raises(RpcFailure, match="unknown tool"):  # not a tool: a protocol error
            c.call("tools/call", {"name": "nope", "arguments": {}})


def test_subscribed_connections_receive_memory_notifications(daemon):
    with daemon.client() as listener, daemon.client() as writer:
        assert listener.call("events/subscribe")["subscribed"]
        m = writer.call("memory_write", {"content": "announce me"})
        note = listener.read_message()
        assert note["method"] == "notifications/memory"
        assert note["params"] == {"event": "written", "id": m["id"]}
        assert "id" not in note
        writer.call("memory_delete", {"id": m["id"]})
        assert listener.read_message()["params"]["event"] == "deleted"


def test_a_bad_client_never_disturbs_another(daemon):
    good = daemon.client()
    bad = raw(daemon)
    bad.sendall(b"\xff\xfe\x00garbage\n{" * 1000)
    bad.sendall(b"x" * (3 << 20))  # an unterminated huge line, then hang up
    bad.close()
    assert good.call("memory_write", {"content": "still fine"})["content"] == "still fine"
    assert good.call("health")["status"] == "ok"
    good.close()


def test_client_helper_reads_replies_split_across_chunks(daemon):
    with Client(daemon.socket) as c:
        big = "y" * 200_000
        m = c.call("memory_write", {"content": big})
        assert c.call("memory_read", {"id": m["id"]})["content"] == big
