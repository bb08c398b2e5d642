"""The derived indexes agree with the files: batches, rebuilds, model changes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from memoryd.config import Config
from memoryd.engine import NewMemory
from memoryd.errors import Forbidden, InvalidParams
from memoryd.models.embedder import INT8_ID
from memoryd.models.variant import FORCE_VARIANT
from memoryd.retrieval.vectors import ChromaVectors
from memoryd.scopes import Caller
from tests.retrieval.conftest import Harness, older_collection


async def test_batch_writes_commit_together_and_fail_alone(harness):
    results = await harness.engine.writes.write_many([
        NewMemory(content="first batch note about sailing"),
        NewMemory(content="   "),
        NewMemory(content="first batch note about sailing"),
        NewMemory(content="second batch note about kayaks", scope="user:kim"),
    ], Caller(agent="agent:bot"))
    first, empty, again, other = results
    assert isinstance(empty, InvalidParams) and empty.field == "content"
    assert isinstance(other, Forbidden) is False and other[0].scope == "user:kim"
    assert again[0].id == first[0].id and again[1] is False
    assert first[0].scope == "global"  # an agent writes to global unless it names a scope
    found = await harness.call("memory_smart_search", query="sailing", scope="global")
    assert [m["id"] for m in found["memories"]] == [first[0].id]
    results = await harness.engine.writes.write_many([NewMemory(content="x", scope="agent:other")],
                                              Caller(agent="agent:bot"))
    assert isinstance(results[0], Forbidden)


async def test_turn_context_follows_its_neighbours(harness):
    ids = []
    for i, line in enumerate(["Ann: I adopted a puppy last week", "Bo: What breed is it?",
                              "Ann: A border collie, very energetic"]):
        from datetime import UTC, datetime, timedelta
        ids.append(await harness.write(line, session="chat-1", role="user" if i != 1 else
                                       "assistant",
                                       created_at=datetime(2024, 1, 1, tzinfo=UTC)
                                       + timedelta(seconds=i)))
    corpus = harness.engine.stores.hybrid.corpus
    assert corpus.neighbours(ids[1]) == (ids[0], ids[2])
    row = corpus.row_of[ids[1]]
    own, ctx = corpus.vectors("own", [row])[0], corpus.vectors("ctx", [row])[0]
    assert float(own @ ctx) < 0.99, "context differs from own text"
    explained = await harness.call("memory_explain", query="what dog breed did Ann get")
    by_id = {c["id"]: c["scores"] for c in explained["candidates"]}
    assert by_id[ids[2]]["neighbour_credit"] > 0 and by_id[ids[2]]["session_boost"] > 0
    standalone = await harness.write("Dogs need walks twice a day")
    explained = await harness.call("memory_explain", query="dog walks")
    alone = next(c["scores"] for c in explained["candidates"] if c["id"] == standalone)
    assert alone["neighbour_credit"] == 0
    await harness.engine.writes.delete(ids[1], Caller())
    assert corpus.neighbours(ids[0]) == (None, ids[2])


async def test_index_rebuilt_after_deletion_and_model_change(make_harness, tmp_path):
    root = tmp_path / "root"
    h = await make_harness(root=root)
    a = await h.write("The boat is moored at pier 7 in Kiel")
    await h.write("Engine oil was changed in May")
    h.engine.close()
    shutil.rmtree(root / "index")
    h2 = await make_harness(root=root)
    result = await h2.call("memory_smart_search", query="where is the boat")
    assert result["memories"][0]["id"] == a
    # a vector store written by another model is re-embedded at the next start
    store, model = h2.engine.stores.hybrid.vectors, h2.engine.embedder.model_id
    own = [batch for batch in store.scan(model) if batch[0] == "own"]
    assert sum(len(ids) for _, _, ids, _, _ in own) == 2
    for kind, scope, ids, vectors, hashes in own:
        store.upsert(kind, scope, ids, vectors, hashes, "some-older-model")
    h2.engine.close()
    # (the snapshot names the model too; without it, the vectors' labels decide)
    (root / "index" / "corpus.snapshot").unlink()
    h3 = await make_harness(root=root)
    summary = await h3.engine.sync.startup()
    assert summary["vectors_embedded"] == 0, "the restart already re-embedded them"
    store = h3.engine.stores.hybrid.vectors
    assert list(store.scan("some-older-model")) == []
    assert sum(len(b[2]) for b in store.scan(model) if b[0] == "own") == 2
    result = await h3.call("memory_smart_search", query="where is the boat")
    assert result["memories"][0]["id"] == a


def test_memoryd_reindex_command(short_tmp, monkeypatch):
    monkeypatch.delenv(FORCE_VARIANT, raising=False)  # which variant reindex picks is tested
    root = short_tmp / "ri"
    (root / "categories" / "knowledge").mkdir(parents=True)
    (root / "categories" / "knowledge" / "kiel.md").write_text("The boat is in Kiel\n")
    (root / "index").mkdir()
    (root / "index" / "embedder").write_text("fp32\n")  # an older store
    proc = subprocess.run([sys.executable, "-m", "memoryd", "reindex", "--root", str(root)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "vectors_embedded 1" in proc.stdout
    events = [json.loads(x) for x in proc.stderr.splitlines() if x.startswith("{")]
    assert any(e.get("event") == "index.embedding"
               and e["model"] == INT8_ID for e in events), \
        "reindex moves the store to the default embedder"
    assert (root / "index" / "embedder").read_text() == "int8\n"


def test_reindex_drops_a_file_that_no_longer_parses_though_its_stamp_is_the_same(
        short_tmp):
    """A broken edit that kept the file's size and time (the stamp a start trusts):
    reindex reads every file, so the memory is dropped from the indexes and the file
    is reported, not served from the row it had."""
    root = short_tmp / "ri2"
    (root / "categories" / "knowledge").mkdir(parents=True)
    note = root / "categories" / "knowledge" / "kiel.md"
    note.write_text("The boat is in Kiel\n")

    def reindex() -> str:
        proc = subprocess.run([sys.executable, "-m", "memoryd", "reindex", "--root",
                               str(root)], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    assert "memories 1" in reindex()
    text, stat = note.read_text(), note.stat()
    note.write_text(text.replace("scope: global", "scope: ../..x"))  # the same size
    os.utime(note, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert "deleted 1, rejected 1" in (out := reindex()) and "memories 0" in out


async def test_corrupted_vector_store_is_set_aside_and_rebuilt(make_harness, tmp_path):
    root = tmp_path / "root"
    h = await make_harness(root=root)
    a = await h.write("The spare key is under the blue flowerpot")
    h.engine.close()
    (root / "index" / "chroma" / "chroma.sqlite3").write_bytes(b"not a database" * 500)
    h2 = await make_harness(root=root)
    result = await h2.call("memory_smart_search", query="where is the spare key")
    assert result["memories"][0]["id"] == a
    assert list((root / "index").glob("chroma.corrupt-*")), "the damaged copy is kept aside"


async def test_compressed_memories_only_on_request(harness):
    keep = await harness.write("Kayak rental at the north beach costs 20 euros")
    old = await harness.write("Kayak trip notes from 2019, long and detailed")
    record = harness.engine.catalog.writer.record_by_id(old)
    path = harness.engine.root / record.path
    path.write_text(path.read_text().replace("version: 1", "version: 1\ncompressed: true"))
    await harness.engine.sync.sync_paths([record.path])
    found = await harness.call("memory_smart_search", query="kayak", top_k=5)
    assert [m["id"] for m in found["memories"]] == [keep]
    found = await harness.call("memory_smart_search", query="kayak", top_k=5,
                               include_compressed=True)
    assert {m["id"] for m in found["memories"]} == {keep, old}


async def test_keyword_index_rebuild_reuses_stored_vectors(make_harness, tmp_path):
    root = tmp_path / "root"
    h = await make_harness(root=root)
    for i in range(5):
        await h.write(f"note {i} about the garden shed")
    h.engine.close()
    for suffix in ("", "-wal", "-shm"):
        (root / "index" / f"keyword.sqlite{suffix}").unlink(missing_ok=True)
    h2 = Harness(root, Config())
    try:
        summary = await h2.engine.sync.startup()  # the first start after the deletion
        assert summary["added"] == 5 and summary["vectors_embedded"] == 0
        found = await h2.call("memory_smart_search", query="garden shed")
        assert len(found["memories"]) == 5
    finally:
        h2.engine.close()


async def test_vectors_stay_unpersisted_until_the_store_has_them(make_harness):
    """`stats` reads `unpersisted` from another thread: while the batch is being written
    it still counts them (a kill then would lose them), and a failed write keeps them
    for the next round; vectors deleted in between are dropped."""
    from tests.fakes import FakeEmbedder, MemoryVectors

    h = await make_harness(embedder=FakeEmbedder(), vectors=MemoryVectors())
    kept = [await h.write(f"harbour note {i}") for i in range(3)]
    gone = await h.write("a note deleted before its vector is stored")
    hybrid = h.engine.stores.hybrid
    assert set(hybrid.unpersisted) == {*kept, gone}
    await h.call("memory_delete", id=gone)
    seen: list[int] = []
    upsert = hybrid.vectors.upsert

    def failing(*args, **kwargs):
        seen.append(len(hybrid.unpersisted))
        raise OSError("disk full")

    hybrid.vectors.upsert = failing
    with pytest.raises(OSError, match="disk full"):
        await h.engine.stores.workers.write(hybrid.persist_deferred)
    assert seen == [4] and set(hybrid.unpersisted) == {*kept, gone}

    def counting(*args, **kwargs):
        seen.append(len(hybrid.unpersisted))
        upsert(*args, **kwargs)

    hybrid.vectors.upsert = counting
    assert await h.engine.stores.workers.write(hybrid.persist_deferred) == 3
    assert seen == [4, 4] and hybrid.unpersisted == {}
    stored = {i for (kind, _), col in hybrid.vectors.data.items() if kind == "own" for i in col}
    assert set(kept) <= stored and gone not in stored


async def test_an_older_vector_store_is_moved_not_re_embedded(make_harness, tmp_path):
    """A root an older memoryd wrote (each vector's hash and model in chroma's metadata)
    starts without embedding again: the vectors move into labelled collections once."""
    root = tmp_path / "root"
    h = await make_harness(root=root)
    a = await h.write("The boat is moored at pier 7 in Kiel")
    await h.write("Engine oil was changed in May")
    await h.engine.stores.workers.write(h.engine.stores.hybrid.persist_deferred)
    model = h.engine.embedder.model_id
    h.engine.close()  # its vector process ends: the store is this test's to rewrite
    chroma = root / "index" / "chroma"
    store = ChromaVectors(chroma)
    for kind, scope, ids, vectors, hashes in list(store.scan(model)):
        older_collection(store.client, kind, scope, ids, vectors,
                         [{"h": x, "m": model} for x in hashes])
    for col in store.client.list_collections():
        if "-labelled-" in col.name:
            store.client.delete_collection(col.name)
    store.close()
    (root / "index" / "corpus.snapshot").unlink()  # a full rebuild, as after an upgrade
    h2 = Harness(root, Config())
    try:
        summary = await h2.engine.sync.startup()
        assert summary["vectors_embedded"] == 0
        store2 = h2.engine.stores.hybrid.vectors
        assert sum(len(b[2]) for b in store2.scan(model) if b[0] == "own") == 2
        result = await h2.call("memory_smart_search", query="where is the boat")
        assert result["memories"][0]["id"] == a
    finally:
        h2.engine.close()
    store = ChromaVectors(chroma)
    names = [c.name for c in store.client.list_collections()]
    store.close()
    assert names and all("-labelled-" in n for n in names), names
