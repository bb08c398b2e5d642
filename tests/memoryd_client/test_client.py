"""memoryd_client against a real daemon: the blocking Client and the asyncio
AsyncClient (tool methods, pipelined batches, notifications, reconnection after a
restart that keeps the agent's identity), and the trio example as its users run it."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memoryd_client import AsyncClient, Client, ConnectionLost, DaemonUnavailable, RpcFailure

EXAMPLE = Path(__file__).parents[2] / "examples" / "trio_client.py"


def test_client_methods_batch_notifications_and_errors(daemon):
    with Client(daemon.socket, name="tester") as memory:
        assert memory.server_info["agent"] == "agent:tester"
        note = memory.memory_write("Ann likes green tea", category="people", tags=["ann"])
        assert note["scope"] == "global" and note["duplicate"] is False
        assert memory.memory_read(note["id"][:8])["id"] == note["id"]
        assert memory.memory_search("green", from_="2000-01-01")["total"] == 1
        with pytest.raises(RpcFailure) as info:
            memory.memory_read("no-such-id")
        assert info.value.code == -32001 and "no memory" in info.value.message

        with memory.batch() as batch:  # one write, one group commit
            pending = [batch.memory_write(f"batched note {i}") for i in range(20)]
            bad = batch.memory_write("")
        assert all(p.done for p in pending)
        assert len({p.result()["id"] for p in pending}) == 20
        with pytest.raises(RpcFailure):
            bad.result()

        events = memory.notifications(timeout=10)
        with Client(daemon.socket) as other:
            other.memory_write("written elsewhere")
        event = next(events)
        assert event["method"] == "notifications/memory"
        assert event["params"]["event"] == "written"


def test_client_reconnects_after_a_restart_as_the_same_agent(daemon):
    memory = Client(daemon.socket, name="survivor", retries=8, backoff=0.1)
    first = memory.memory_write("before the restart")
    assert first["scope"] == "global"
    daemon.stop()
    daemon.start()
    again = memory.memory_write("after the restart")  # reconnects, re-initializes
    assert memory.server_info["agent"] == "agent:survivor"
    assert again["id"] != first["id"]
    memory.close()
    daemon.stop()
    with pytest.raises(DaemonUnavailable):
        Client(daemon.socket, retries=1, backoff=0.01)
    daemon.start()


def test_async_client_pipelines_and_streams(daemon):
    async def main() -> None:
        async with AsyncClient(daemon.socket, name="async-agent") as memory:
            written = await asyncio.gather(*(memory.memory_write(f"async note {i}")
                                             for i in range(10)))
            assert len({w["id"] for w in written}) == 10
            async with memory.batch() as batch:
                futures = [batch.memory_search("async"), batch.memory_read("nope")]
            assert (await futures[0])["total"] == 10
            with pytest.raises(RpcFailure):
                await futures[1]
            await memory.subscribe()  # answered: from here on, every event is queued
            stream = memory.notifications()
            first = asyncio.ensure_future(stream.__anext__())
            await memory.memory_write("seen by the stream")
            note = await asyncio.wait_for(first, 10)
            assert note["params"]["event"] == "written"

    asyncio.run(main())


def test_async_client_reconnects(daemon):
    async def main() -> None:
        memory = await AsyncClient(daemon.socket, retries=8).connect()
        await memory.memory_write("one")
        daemon.stop()
        with pytest.raises((ConnectionLost, DaemonUnavailable)):
            await memory.memory_write("while it is down", category="people")
        daemon.start()
        assert (await memory.memory_search("one"))["total"] == 1
        await memory.aclose()

    asyncio.run(main())


def test_the_trio_example_runs(daemon):
    done = subprocess.run([sys.executable, str(EXAMPLE), "what does Ann drink?"],
                          env=dict(os.environ, MEMORY_HOME=str(daemon.root)),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "event: notifications/memory written" in done.stdout
    assert "<memory>" in done.stdout and "green tea" in done.stdout


def test_a_pool_shares_connections_between_threads(daemon):
    from concurrent.futures import ThreadPoolExecutor

    from memoryd_client import ClientPool

    pool = ClientPool(daemon.socket)
    with ThreadPoolExecutor(8) as threads:
        written = list(threads.map(lambda i: pool.call("memory_write",
                                                       {"content": f"pooled {i}"}), range(40)))
    assert len({w["id"] for w in written}) == 40
    assert daemon.call("health")["connections"] <= 9  # at most one per thread, plus ours
    with pytest.raises(RpcFailure):
        pool.call("memory_read", {"id": "nope"})
    daemon.stop()
    with pytest.raises((DaemonUnavailable, OSError)):
        pool.call("health")
    daemon.start()
    assert pool.call("health")["status"] == "ok"  # a fresh connection after the restart
    pool.close()


def test_a_closed_socket_is_connection_lost_never_a_broken_pipe(short_tmp, capsys):
    """The daemon closing mid-call is ConnectionLost: never a BrokenPipeError, which
    memoryctl keeps for its own closed stdout (`| head`) and exits 141 on quietly."""
    from memoryctl.main import main

    path = short_tmp / "closing.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)

    def close_each() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # the listener was closed: the test is over
            conn.close()

    closer = threading.Thread(target=close_each, daemon=True)
    closer.start()
    try:
        memory = Client(path, retries=0)
        deadline = time.monotonic() + 10
        while memory.connected:  # until the close has reached this end
            assert time.monotonic() < deadline
            time.sleep(0.01)
        with pytest.raises(ConnectionLost):
            memory.send_line(b'{"jsonrpc": "2.0", "id": 1, "method": "health"}',
                             reconnect=False)
        assert not memory.connected
        capsys.readouterr()
        assert main(["--socket", str(path), "call", "health"]) == 1
        assert "failed: the daemon closed the connection" in capsys.readouterr().err
    finally:
        listener.close()
