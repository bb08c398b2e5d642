"""Rig: the real engine over a real root, with the fakes (tests/fakes.py) for the model
and chromadb, and its dispatcher: a tool call goes in as the line a socket carries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memoryd.config import parse_config
from memoryd.ports import Embedder
from memoryd.protocol.dispatch import Connection
from memoryd.server.app import App
from memoryd.server.wiring import build_dispatcher, build_engine
from tests.fakes import FakeEmbedder, MemoryVectors


class Rig:
    def __init__(self, root: Path, config: dict[str, Any] | None = None,
                 embedder: Embedder | None = None) -> None:
        """`embedder`: the fake unless the model is what a test is about."""
        self.root = root
        self.config = parse_config(config or {})
        self.engine = build_engine(root, self.config, embedder=embedder or FakeEmbedder(),
                                   vectors=MemoryVectors())
        app = App(engine=self.engine, config=self.config, root=root, socket_path=root / "s")
        self.dispatcher = build_dispatcher(app)

    async def start(self) -> dict[str, int]:
        summary = await self.engine.sync.startup()
        await self.engine.conversation.start()
        return summary

    def close(self) -> None:
        self.engine.close()

    async def call(self, method: str, conn: Connection | None = None, **params: Any) -> dict:
        """The JSON-RPC reply (result or error) to one request line."""
        line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        return json.loads(await self.dispatcher.handle(line.encode(), conn or Connection()))

    async def result(self, method: str, conn: Connection | None = None, **params: Any) -> dict:
        reply = await self.call(method, conn, **params)
        assert "result" in reply, reply
        return reply["result"]

    async def error(self, method: str, conn: Connection | None = None, **params: Any) -> dict:
        reply = await self.call(method, conn, **params)
        assert "error" in reply, reply
        return reply["error"]
