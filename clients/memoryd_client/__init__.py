"""memoryd_client: talk to the memoryd daemon from Python, with the standard library only.

    from memoryd_client import Client
    with Client(name="my-agent") as memory:           # ~/.memory/memory.sock
        memory.memory_write("Ann prefers tea", category="people")
        print(memory.memory_recall("what does Ann drink?")["text"])

`Client` blocks; `AsyncClient` is the asyncio twin. Both hold one persistent
connection, have one method per tool (generated from the tool table), pipeline with
`batch()`, reconnect with backoff when the daemon restarts, and stream
`notifications()`. examples/trio_client.py shows trio.
"""

from typing import Any

from memoryd_client.paths import resolve_root, resolve_socket
from memoryd_client.pool import ClientPool
from memoryd_client.sync import Batch, Client, Pending
from memoryd_client.wire import ConnectionLost, DaemonUnavailable, RpcFailure


def __getattr__(name: str) -> Any:
    # The asyncio client on first use: memoryctl starts without importing asyncio.
    if name in ("AsyncClient", "AsyncBatch"):
        from memoryd_client import aio

        return getattr(aio, name)
    raise AttributeError(f"module 'memoryd_client' has no attribute {name!r}")


__all__ = ["AsyncBatch", "AsyncClient", "Batch", "Client", "ClientPool", "ConnectionLost",
           "DaemonUnavailable", "Pending", "RpcFailure", "resolve_root", "resolve_socket"]
