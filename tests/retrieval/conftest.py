from __future__ import annotations

import hashlib

import msgspec
import pytest

from memoryd.config import Config, parse_config
from memoryd.engine import NewMemory
from memoryd.protocol.codec import decode_params
from memoryd.protocol.dispatch import Connection
from memoryd.retrieval.vectors import ChromaVectors
from memoryd.scopes import Caller
from memoryd.server.app import App
from memoryd.server.wiring import build_dispatcher, build_engine


class Harness:
    """A real engine (files, SQLite, chroma, the model unless substituted) and its
    dispatcher, in-process. Chroma runs in this process too (the same ChromaVectors the
    daemon's vector process runs): a process of its own would import chromadb again
    for each test, about a second of CPU; tests/retrieval/test_vectors_apart.py and the
    daemons of tests/e2e run it apart."""

    def __init__(self, root, config: Config, **substitutes) -> None:
        if not config.vectors.url:
            substitutes.setdefault("vectors", ChromaVectors(root / "index" / "chroma"))
        self.engine = build_engine(root, config, **substitutes)
        self.app = App(engine=self.engine, config=config, root=root, socket_path=root / "s")
        self.dispatcher = build_dispatcher(self.app)
        self.conn = Connection()

    async def write(self, content: str, caller: Caller | None = None, **kw) -> str:
        memory, _ = await self.engine.writes.write(NewMemory(content=content, **kw),
                                                   caller or Caller())
        return memory.id

    async def call(self, tool_name: str, conn: Connection | None = None, **params):
        """A tool call as the dispatcher runs it (params encoded, decoded, validated),
        its result as a client reads it (plain JSON values); an error is raised as
        itself."""
        tool = self.dispatcher.tools[tool_name]
        args = decode_params(msgspec.Raw(msgspec.json.encode(params)), tool.params)
        return msgspec.json.decode(msgspec.json.encode(
            await tool.fn((conn or self.conn).caller, args)))


@pytest.fixture
async def harness(tmp_path):
    h = Harness(tmp_path, Config())
    await h.engine.sync.startup()
    yield h
    h.engine.close()


@pytest.fixture
def make_harness(tmp_path):
    made: list[Harness] = []

    async def make(config: dict | None = None, root=None, **substitutes) -> Harness:
        h = Harness(root or tmp_path, parse_config(config or {}), **substitutes)
        await h.engine.sync.startup()
        made.append(h)
        return h

    yield make
    for h in made:
        h.engine.close()


def older_collection(client, kind: str, scope: str, ids: list[str], vectors,
                     metas: list[dict]) -> None:
    """A collection as memoryd wrote it before labels: the hash and model in metadata."""
    col = client.get_or_create_collection(
        f"{kind}-{hashlib.sha1(scope.encode()).hexdigest()[:20]}", embedding_function=None,
        metadata={"scope": scope, "kind": kind, "hnsw:space": "cosine"})
    col.upsert(ids=ids, embeddings=vectors, metadatas=metas)
