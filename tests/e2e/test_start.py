"""Clients that wait out a start: a real daemon rebuilding its index from 800 hand-written
notes, and every client a user runs talking to it the moment its socket appears (the
blocking client, a batch, the asyncio client, memoryctl, `memoryctl mcp` driven by the
official MCP SDK, the proxy's pool). Each sees its answer, none sees the start."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from memoryd_client import AsyncClient, Client, ClientPool, RpcFailure
from tests.conftest import Daemon
from tests.e2e.test_lifecycle import wait_for

NOTES = 800


def _rebuilding_daemon(root: Path) -> Daemon:
    folder = root / "categories" / "knowledge"
    folder.mkdir(parents=True)
    for i in range(NOTES):
        (folder / f"note-{i}.md").write_text(f"Hand-written note {i} about the harbour, "
                                             f"boat {i % 37}\n")
    daemon = Daemon(root).start(wait=False)
    wait_for(daemon.socket.exists, 120, "the socket")
    return daemon


def test_every_client_waits_out_a_start_and_gets_its_answer(short_tmp):
    daemon = _rebuilding_daemon(short_tmp / "root")
    try:
        _every_client(daemon)
    finally:
        daemon.stop()


def _every_client(daemon: Daemon) -> None:
    with Client(daemon.socket, retries=5) as probe:
        first = probe.call("health")
    assert first["status"] == "starting", "the clients below must meet a start"
    waits: dict[str, list[dict[str, Any]]] = {}
    results: dict[str, Any] = {}
    errors: dict[str, BaseException] = {}

    def heard(name: str) -> Callable[[dict[str, Any]], None]:
        return waits.setdefault(name, []).append

    def blocking() -> Any:
        with Client(daemon.socket, retries=5, on_start=heard("blocking")) as c:
            return c.memory_write("Written while the daemon started", category="knowledge")

    def batch() -> Any:
        with Client(daemon.socket, retries=5, on_start=heard("batch")) as c:
            with c.batch() as b:
                pending = [b.memory_write(f"batch note {i}") for i in range(3)]
            return [p.result()["id"] for p in pending]

    def asynchronous() -> Any:
        async def main() -> Any:
            async with AsyncClient(daemon.socket, on_start=heard("async")) as c:
                return await c.memory_search("harbour", limit=1)
        return asyncio.run(main())

    def memoryctl() -> Any:
        return subprocess.run(
            [sys.executable, "-m", "memoryctl", "write", "Written by memoryctl at start"],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "MEMORY_HOME": str(daemon.root)})

    def mcp_host() -> Any:
        server = StdioServerParameters(command=sys.executable, args=["-m", "memoryctl", "mcp"],
                                       env={**os.environ, "MEMORY_HOME": str(daemon.root)})

        async def host() -> Any:
            async with stdio_client(server) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                return await session.call_tool("memory_write",
                                               {"content": "Written by an MCP host at start"})
        return anyio.run(host)

    def pool() -> Any:  # what the proxy and the web view call through
        p = ClientPool(daemon.socket)
        try:
            return p.call("memory_list", {"limit": 1})
        finally:
            p.close()

    def run(name: str, fn: Callable[[], Any]) -> None:
        try:
            results[name] = fn()
        except BaseException as exc:
            errors[name] = exc

    clients = {"blocking": blocking, "batch": batch, "async": asynchronous,
               "memoryctl": memoryctl, "mcp": mcp_host, "pool": pool}
    threads = [threading.Thread(target=run, args=item) for item in clients.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert not errors, errors
    assert results["blocking"]["id"] and len(set(results["batch"])) == 3
    assert results["async"]["total"] >= 1
    assert results["memoryctl"].returncode == 0, results["memoryctl"].stderr
    assert "busy" not in results["memoryctl"].stderr
    assert not results["mcp"].is_error, results["mcp"].content
    assert results["pool"]["total"] >= NOTES
    heard_any = [w for name in ("blocking", "batch", "async") for w in waits.get(name, [])]
    assert heard_any, "the clients waited (and said so to on_start)"
    assert all(w == {} or 0 <= w["percent"] <= 100 for w in heard_any), heard_any
    total = daemon.call("memory_list", {"limit": 1})["total"]
    assert total == NOTES + 1 + 3 + 1 + 1, "each write once: nothing lost, nothing twice"


def test_waiting_is_bounded_and_can_be_turned_off(short_tmp):
    daemon = _rebuilding_daemon(short_tmp / "root")
    try:
        with Client(daemon.socket, retries=5, start_wait=0) as c:
            assert c.call("health")["status"] == "starting"
            try:
                c.memory_write("too early")
                raise AssertionError("a start_wait of 0 sees the busy answer")
            except RpcFailure as failure:
                assert failure.code == -32005 and failure.data["reason"] == "starting"
        early = subprocess.run(
            [sys.executable, "-m", "memoryctl", "--start-wait", "0", "write", "too early"],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "MEMORY_HOME": str(daemon.root)})
        assert early.returncode == 1 and "busy" in early.stderr
    finally:
        daemon.stop()
