from __future__ import annotations

import msgspec
import pytest

from memoryd.access import Caller
from memoryd.app import App
from memoryd.config import Config, parse_config
from memoryd.engine import Engine, NewMemory
from memoryd.protocol.dispatch import Dispatcher, Session
from memoryd.tools.registry import load_tools


class Harness:
    """A real engine (files, SQLite, chroma, the model) and its dispatcher, in-process."""

    def __init__(self, root, config: Config) -> None:
        self.engine = Engine(root, config)
        self.app = App(engine=self.engine, config=config, root=root, socket_path=root / "s")
        self.dispatcher = Dispatcher(self.app, load_tools())
        self.session = Session()

    async def write(self, content: str, caller: Caller | None = None, **kw) -> str:
        memory, _ = await self.engine.write(NewMemory(content=content, **kw), caller or Caller())
        return memory.id

    async def call(self, tool: str, session: Session | None = None, **params):
        """A tool call as the dispatcher runs it (params encoded, decoded, validated)."""
        return await self.dispatcher.run_tool(self.dispatcher.tools[tool],
                                              msgspec.Raw(msgspec.json.encode(params)),
                                              session or self.session, "params")


@pytest.fixture
async def harness(tmp_path):
    h = Harness(tmp_path, Config())
    await h.engine.startup()
    yield h
    h.engine.close()


@pytest.fixture
def make_harness(tmp_path):
    made: list[Harness] = []

    async def make(config: dict | None = None, root=None) -> Harness:
        h = Harness(root or tmp_path, parse_config(config or {}))
        await h.engine.startup()
        made.append(h)
        return h

    yield make
    for h in made:
        h.engine.close()
