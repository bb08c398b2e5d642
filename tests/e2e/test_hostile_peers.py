"""Peers that misbehave on purpose, against a daemon process: a client that pipelines
requests and never reads its replies, listeners that subscribe and stay quiet. (The
other hostile peers have their own modules: a page on another local port in
test_web.py, an LLM that never stops talking in tests/llm/test_hostile_llm.py.)

Bounds: a non-reading client grows the daemon by less than 64 MiB, however much it
asks for (before, every reply of a received chunk was built first: 600 lists of 1,000
memories took a daemon from 242 to 2,090 MiB). Subscribers hold at most half of
`server.max_connections`: quiet listeners never lock the other clients out."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

from tests.e2e.test_lifecycle import wait_for

MIB = 1024 * 1024


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def quiet(pid: int) -> bool:
    """The process used no CPU over half a second: it has done what it can."""
    before = cpu_ticks(pid)
    time.sleep(0.5)
    return cpu_ticks(pid) - before <= 2


def test_a_client_that_never_reads_its_replies_cannot_grow_the_daemon(daemon):
    with daemon.client() as c, c.batch() as b:
        for i in range(60):  # few memories, long ones: the replies are big, not many
            b.memory_write(f"note {i}: " + "a longer line of text to make replies big " * 125)
    pid = daemon.proc.pid
    wait_for(lambda: quiet(pid), 60, "the writes to settle")
    before = rss(pid)
    asks = 400  # each reply ~0.3 MB: 130 MB if they were all built before any was sent
    request = b"".join(json.dumps({"jsonrpc": "2.0", "id": n, "method": "memory_list",
                                   "params": {"limit": 1000}}).encode() + b"\n"
                       for n in range(asks))
    greedy = socket.socket(socket.AF_UNIX)
    greedy.connect(str(daemon.socket))
    greedy.sendall(request)  # 24 KB of requests, and not one byte read
    wait_for(lambda: quiet(pid), 60, "the daemon to do what it can")
    grown = rss(pid) - before
    assert grown < 64 * MIB, f"the daemon grew by {grown / MIB:.0f} MiB"
    assert daemon.call("health")["status"] == "ok", "the others are still served"
    greedy.settimeout(60)
    answered, buffered = 0, b""
    while answered < asks:  # read now: every reply comes, in order
        data = greedy.recv(1 << 20)
        assert data, "the daemon closed the connection"
        buffered += data
        *lines, buffered = buffered.split(b"\n")
        for line in lines:
            assert json.loads(line)["id"] == answered
            answered += 1
    greedy.close()


def test_quiet_subscribers_never_lock_the_other_clients_out(make_daemon):
    daemon = make_daemon(config="server:\n  max_connections: 4\n").start()
    listeners = []
    try:
        answers = []
        for n in range(3):
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(30)
            s.connect(str(daemon.socket))
            s.sendall(json.dumps({"jsonrpc": "2.0", "id": n,
                                  "method": "events/subscribe"}).encode() + b"\n")
            answers.append(json.loads(s.makefile().readline()))
            listeners.append(s)
        assert [("result" in a) for a in answers] == [True, True, False]
        assert answers[2]["error"]["code"] == -32005
        assert answers[2]["error"]["data"]["reason"] == "too_many_subscribers"
        listeners.pop().close()  # the refused one gives its slot back
        assert daemon.call("health")["status"] == "ok", "a client still gets in"
    finally:
        for s in listeners:
            s.close()


def test_an_import_file_with_bad_lines_imports_the_good_ones(daemon, tmp_path):
    """memoryctl import: a line that is not UTF-8, or too large to send, is reported
    with its number, and every other line is imported (a bad byte used to end the
    import with a traceback, and a line over the limit left the client waiting out its
    timeout). A line is sent as the object it holds, so a line the daemon itself could
    export (262,000 quotes and backslashes: 524 KB as a line, 1 MiB once escaped a
    second time) imports whole."""
    from tests.e2e.test_memoryctl import ok

    def line(n: int, content: str) -> bytes:
        return json.dumps({"id": f"00000000-0000-4000-8000-0000000000{n:02d}",
                           "content": content, "category": "knowledge"},
                          ensure_ascii=False).encode() + b"\n"

    heavy = '\\"' * 131_000
    controls = "\x01" * 200_000  # 1.2 MB as JSON however it is sent
    source = tmp_path / "export.jsonl"
    source.write_bytes(line(1, "first good line") + b'{"content": "caf\xe9"}\n'
                       + line(3, heavy) + line(4, controls) + line(5, "last good line"))
    result = ok(daemon, "import", "--input", str(source))
    assert (result["imported"], [f["line"] for f in result["failed"]]) == (3, [2, 4])
    assert "UTF-8" in result["failed"][0]["reason"]
    assert "1048576" in result["failed"][1]["reason"]
    stored = daemon.call("memory_read", {"id": "00000000-0000-4000-8000-000000000003"})
    assert stored["content"] == heavy


def test_a_request_over_the_limit_is_answered_not_waited_for(daemon):
    """The daemon answers a line over 1 MiB with -32004 and a null id (it cannot read
    the id): the client takes that as its call's answer."""
    from memoryd_client import Client, RpcFailure

    with Client(daemon.socket, retries=0, timeout=30) as c:  # waiting out: TimeoutError
        try:
            c.memory_write("x" * (2 << 20))
            raise AssertionError("a 2 MiB request was taken")
        except RpcFailure as failure:
            assert failure.code == -32004
        assert c.memory_write("a normal note")["id"], "the connection goes on"
