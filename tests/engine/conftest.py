"""An engine over real files and SQLite, with the fake embedder and in-memory vectors
(tests/fakes.py)."""

from __future__ import annotations

import pytest

from memoryd.config import Config
from memoryd.server.wiring import build_engine
from tests.fakes import FakeEmbedder, MemoryVectors


@pytest.fixture
async def engine(tmp_path):
    engine = build_engine(tmp_path, Config(), embedder=FakeEmbedder(), vectors=MemoryVectors())
    await engine.sync.startup()
    yield engine
    engine.close()
