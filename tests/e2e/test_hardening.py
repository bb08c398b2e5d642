"""The daemon as a process against hostile input (issue #9's reproductions): files it
did not write, a second daemon aimed at its socket, hostile lines in a pipelined
burst, a root with loose permissions."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import subprocess
import sys

from tests.e2e.test_lifecycle import wait_for

BOMB = "---\na0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 9)) + "---\nboom\n"


def test_a_live_socket_is_never_taken_over(make_daemon, short_tmp):
    a = make_daemon("a").start()
    other_root = short_tmp / "b"
    proc = subprocess.run([sys.executable, "-m", "memoryd", "serve", "--root", str(other_root),
                           "--socket", str(a.socket)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "answering on" in proc.stderr and str(a.socket) in proc.stderr
    assert a.call("health")["pid"] == a.proc.pid, "A keeps its socket"
    # a regular file in the socket's place is not removed either
    squatter = short_tmp / "not-a-socket"
    squatter.write_text("mine")
    proc = subprocess.run([sys.executable, "-m", "memoryd", "serve", "--root", str(other_root),
                           "--socket", str(squatter)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and "not a socket" in proc.stderr
    assert squatter.read_text() == "mine"


def test_an_existing_root_is_tightened_and_what_memoryd_creates_is_private(make_daemon):
    d = make_daemon()
    d.root.mkdir(mode=0o755)
    os.chmod(d.root, 0o755)
    d.start()
    assert stat.S_IMODE(d.root.stat().st_mode) == 0o700
    d.call("memory_write", {"content": "a turn", "session": "chat-1", "role": "user"})
    for folder in (d.root / "sessions" / "chat-1", d.root / "sessions" / "chat-1" / "turns"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    def loose() -> list:
        return [p for p in (d.root / "index").rglob("*")
                if stat.S_IMODE(p.stat().st_mode) & 0o077]

    assert loose() == []
    # a root left loose by an older version (or by hand) is tightened at the next start
    assert d.stop() == 0
    os.chmod(d.root, 0o755)
    for path in (d.root / "index").rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    d.start()
    assert stat.S_IMODE(d.root.stat().st_mode) == 0o700 and loose() == []


def test_hostile_files_made_while_stopped_never_stop_start_up(make_daemon):
    d = make_daemon()
    knowledge = d.root / "categories" / "knowledge"
    knowledge.mkdir(parents=True)
    os.symlink("/nonexistent", knowledge / "l.md")
    os.mkfifo(knowledge / "f.md")
    (knowledge / "bomb.md").write_text(BOMB)
    (knowledge / "evilturn.md").write_text(
        "---\nid: evilturn\nkind: turn\nrole: user\nsession: ../../../../tmp/escaped\n---\nx")
    (knowledge / "fine.md").write_text("a fine note")
    d.start()
    stats = d.call("stats")
    assert stats["rejected_files"]["count"] == 4 and stats["memories"] == 1
    m = d.call("memory_write", {"content": "written beside them"})
    assert d.call("memory_read", {"id": m["id"]})["content"] == "written beside them"
    status = subprocess.run([sys.executable, "-m", "memoryctl", "--root", str(d.root),
                             "status"], capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stderr
    for name in ("l.md", "f.md", "bomb.md", "evilturn.md"):
        assert f"categories/knowledge/{name}" in status.stdout
    assert d.stop() == 0, "SIGTERM completes with a FIFO in the root"


def test_a_link_made_while_running_is_reported_not_indexed(daemon, short_tmp):
    secret = short_tmp / "secret.txt"
    secret.write_text("the secret password line")
    os.symlink(secret, daemon.root / "categories" / "knowledge" / "p.md")
    wait_for(lambda: daemon.call("stats")["rejected_files"]["count"] == 1, 30, "the report")
    assert daemon.call("memory_search", {"query": "password"})["total"] == 0


def test_hostile_lines_in_a_pipelined_burst_are_answered_one_by_one(daemon):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(60)
    sock.connect(str(daemon.socket))
    burst = [b'{"id": 1, "method": "memory_write", "params": {"content": "before"}}',
             b'{"id": 2, "method": "memory_write", "params": {"content": "x", "tags": '
             + b"[" * 5000 + b"]" * 5000 + b"}}",
             b'{"id": 3, "method": "memory_write", "params": {"content": "bad \xff\xfe"}}',
             b'{"id": 4, "method": "memory_write", "params": {"content": "after"}}']
    sock.sendall(b"\n".join(burst) + b"\n")
    buf = b""
    while buf.count(b"\n") < 4:
        chunk = sock.recv(65536)
        assert chunk, "the connection was dropped"
        buf += chunk
    replies = [json.loads(line) for line in buf.splitlines()]
    assert "result" in replies[0] and "result" in replies[3]
    assert [r.get("error", {}).get("code") for r in replies] == [None, -32700, -32700, None]
    assert replies[2]["id"] == 3  # the envelope was readable: the reply names the line
    sock.close()
    assert daemon.call("memory_list", {})["total"] == 2


def test_out_of_descriptors_the_daemon_waits_and_serves_the_queued_client(make_daemon):
    """With its descriptor limit lowered to what it holds, connections queue: the daemon
    logs the spell, keeps serving the connection it has, and accepts the queued ones as
    soon as a descriptor is free. Nothing is refused, nothing crashes. (No git: its
    commits' pipes come and go, and the limit must be reached whatever else runs.)"""
    import resource

    daemon = make_daemon(config="git:\n  enabled: false\n").start()
    daemon.call("memory_write", {"content": "written before the limit"})
    pid = daemon.proc.pid
    soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    first = socket.socket(socket.AF_UNIX)
    first.connect(str(daemon.socket))
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    first.sendall(ping)
    assert b'"id":1' in first.recv(4096)
    queued = []
    try:
        resource.prlimit(pid, resource.RLIMIT_NOFILE,
                         (len(os.listdir(f"/proc/{pid}/fd")), hard))
        for _ in range(40):  # a descriptor freed meanwhile lets a connection in: more
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(60)
            s.connect(str(daemon.socket))  # the kernel queues it; accept() fails
            s.sendall(ping)
            queued.append(s)
            if "accept.at_capacity" in daemon.log:
                break
        wait_for(lambda: "accept.at_capacity" in daemon.log, 30, "the daemon at capacity")
        first.sendall(ping)
        assert b'"id":1' in first.recv(4096), "the connection it has is still served"
    finally:
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
    first.close()
    for s in queued:
        assert b'"id":1' in s.recv(4096)
        s.close()
    # accept() fails with EMFILE even when no connection waits (the descriptor is taken
    # first), so the spell may have begun after the last queued one was let in: the
    # recovery is logged at the next connection accepted.
    assert daemon.call("health")["status"] == "ok"
    wait_for(lambda: "accept.recovered" in daemon.log, 30, "the recovery logged")
    events = []
    for line in daemon.log.splitlines():  # a library's warning may precede a JSON line
        start = line.find('{"')
        with contextlib.suppress(ValueError):
            events.append(json.loads(line[start:]).get("event") if start >= 0 else None)
    accepts = [e for e in events if e and e.startswith("accept.")]
    assert "accept.at_capacity" in events and "accept.recovered" in events, accepts
    assert events.count("accept.at_capacity") <= events.count("accept.recovered") + 1
    assert "accept.failed" not in events
