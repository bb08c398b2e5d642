"""While start-up builds the indexes: health says starting (with the progress), stats
and memory_read answer, the other tools are busy with the percentage; the rebuild
logs each 5%."""

from __future__ import annotations

import threading

import trio
from structlog.testing import capture_logs

from tests.fakes import FakeEmbedder
from tests.rig import Rig


class GatedEmbedder(FakeEmbedder):
    """Embeds only once `release` is set (start-up stops in its embedding step)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.waiting = threading.Event()

    def embed(self, texts: list[str]):
        if not self.release.is_set():
            self.waiting.set()
            self.release.wait(60)
        return super().embed(texts)


async def test_tools_are_busy_until_the_indexes_are_built(tmp_path):
    folder = tmp_path / "categories" / "knowledge"
    folder.mkdir(parents=True)
    for i in range(40):
        (folder / f"note-{i}.md").write_text(f"Hand-written note {i} about the harbour\n")
    rig = Rig(tmp_path)
    embedder = rig.engine.stores.hybrid.embedder = GatedEmbedder()
    with capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(rig.start)
            await trio.to_thread.run_sync(embedder.waiting.wait, 60)
            health = await rig.result("health")
            assert health["status"] == "starting"
            assert health["rebuild"]["step"] == "embedding" and health["rebuild"]["percent"] == 50
            busy = await rig.error("memory_search", query="harbour")
            assert busy["code"] == -32005
            assert busy["message"].startswith("busy: index rebuilding (50%)")
            mcp = await rig.result("tools/call", name="memory_smart_search",
                                   arguments={"query": "harbour"})
            assert mcp["isError"] and "index rebuilding" in mcp["content"][0]["text"]
            stats = await rig.result("stats")
            assert stats["rebuild"]["total"] == 40 and stats["memories"] == 40
            record = rig.engine.catalog.writer.record_by_path("categories/knowledge/note-7.md")
            read = await rig.result("memory_read", id=record.id)
            assert "note 7" in read["content"]
            embedder.release.set()
    assert (await rig.result("health"))["status"] == "ok"
    found = await rig.result("memory_search", query="harbour")
    assert found["total"] == 40
    percents = [e["percent"] for e in logs if e["event"] == "index.rebuild.progress"]
    # reading files: a line at each 5%; embedding: one batch of 40, from 50% to done
    assert percents == [*range(0, 51, 5), 100], percents
    rig.close()
