"""The engine's collaborators over real files and SQLite, with the fake embedder and
in-memory vectors (tests/fakes.py): every change goes through one UnitOfWork."""

from __future__ import annotations

import subprocess
import sys

import pytest

from memoryd.engine import NewMemory
from memoryd.errors import NotFound
from memoryd.scopes import Caller
from memoryd.store import frontmatter


def _file(engine, memory_id):
    record = engine.catalog.writer.record_by_id(memory_id)
    return frontmatter.parse(engine.files.read_bytes(record.path).decode(), memory_id).memory


async def test_a_group_commit_is_one_unit_files_catalog_vectors(engine):
    embedder = engine.embedder
    before = embedder.calls
    results = await engine.writes.write_many(
        [NewMemory(content=f"note {i} about sailing") for i in range(5)], Caller())
    ids = [r.memory.id for r in results]
    assert embedder.calls - before == 1, "one model call for the whole unit"
    for memory_id in ids:
        assert _file(engine, memory_id).content.startswith("note")
        assert memory_id in engine.stores.hybrid.corpus.row_of
    assert (await engine.reads.search("sailing", _filters(), 10, 0))[1] == 5


def _filters():
    from memoryd.filters import Filters

    return Filters(scopes=["global"])


async def test_a_memory_changed_twice_in_one_unit_keeps_both_edits(engine):
    a, _ = await engine.writes.write(NewMemory(content="the hub"), Caller())

    def twice(uow):
        memory, path = uow.load(a.id)
        memory.tags = ["first"]
        uow.put(memory, path)
        again, _ = uow.load(a.id)
        assert again is memory, "the staged memory, not the file's"
        again.importance = 0.9
        uow.put(again, path)

    await engine.stores.change(twice)
    on_disk = _file(engine, a.id)
    assert (on_disk.tags, on_disk.importance) == (["first"], 0.9)


async def test_a_failing_change_writes_nothing(engine):
    a, _ = await engine.writes.write(NewMemory(content="stays as it is"), Caller())

    def broken(uow):
        memory, path = uow.load(a.id)
        memory.content = "half-done"
        uow.put(memory, path)
        raise RuntimeError("failed before commit")

    with pytest.raises(RuntimeError):
        await engine.stores.change(broken)
    assert _file(engine, a.id).content == "stays as it is"
    assert engine.catalog.inline.get(a.id).content == "stays as it is"


async def test_a_trashed_memory_leaves_no_pending_access_counts(engine):
    a, _ = await engine.writes.write(NewMemory(content="read, then deleted"), Caller())
    await engine.reads.read(a.id, Caller())
    assert engine.access_counts.pending(a.id) is not None
    to = await engine.writes.delete(a.id, Caller())
    assert engine.access_counts.pending(a.id) is None
    assert (engine.root / to).exists() and engine.catalog.inline.get(a.id) is None
    with pytest.raises(NotFound):
        await engine.reads.read(a.id, Caller())


async def test_a_merge_repoints_a_shared_peer_once_per_duplicate(engine):
    w = engine.writes
    keep, _ = await w.write(NewMemory(content="keep me"), Caller())
    one, _ = await w.write(NewMemory(content="duplicate one"), Caller())
    two, _ = await w.write(NewMemory(content="duplicate two"), Caller())
    peer, _ = await w.write(NewMemory(content="the peer"), Caller())
    for other in (one, two):
        await engine.links.link(peer.id, other.id, Caller(), linked=True)
    await engine.links.merge(keep.id, [one.id, two.id])
    assert _file(engine, peer.id).links == [keep.id], "both repoints landed in one file"
    assert sorted(_file(engine, keep.id).replaces) == sorted([one.id, two.id])


async def test_access_counts_flush_in_one_unit(engine):
    a, _ = await engine.writes.write(NewMemory(content="popular"), Caller())
    for _ in range(3):
        await engine.reads.read(a.id, Caller())
    assert await engine.flush_stats() == 1
    assert _file(engine, a.id).access_count == 3
    assert engine.access_counts.pending(a.id) is None


def test_fakes_keep_the_model_and_chromadb_out(tmp_path):
    code = ("import sys, pathlib; from memoryd.config import Config; "
            "from memoryd.server.wiring import build_engine; "
            "from tests.fakes import FakeEmbedder, MemoryVectors; "
            f"build_engine(pathlib.Path({str(tmp_path)!r}), Config(), "
            "embedder=FakeEmbedder(), vectors=MemoryVectors()).close(); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'chromadb', 'onnxruntime', 'tokenizers'}))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=str(__import__("pathlib").Path(__file__).parents[2]))
    assert proc.stdout.strip() == "[]", proc.stderr


async def test_each_change_names_the_files_it_touched(engine):
    """What the git history stages: the files a change wrote, moved, indexed or lost."""
    touched: list[set[str]] = []
    engine.stores.on_change.append(lambda paths: touched.append(set(paths)))
    a, _ = await engine.writes.write(NewMemory(content="the first"), Caller())
    path = engine.catalog.writer.record_by_id(a.id).path
    assert touched[-1] == {path}

    text = (engine.root / path).read_text().replace("the first", "the first, by hand")
    (engine.root / path).write_text(text)
    await engine.sync.sync_paths([path])
    folder = path.rsplit("/", 1)[0]
    kept = f"trash/versions/{folder}/{a.id}.md"  # the text the hand edit replaced (by id)
    assert touched[-1] == {path, kept} and "the first\n" in (engine.root / kept).read_text()

    trash = await engine.writes.delete(a.id, Caller())
    assert touched[-1] == {path, trash}
