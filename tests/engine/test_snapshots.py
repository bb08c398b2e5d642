"""The corpus snapshot (retrieval/snapshots.py, retrieval/snapshot.py): start-up from it
when it can be trusted, a full rebuild when not, and in every case each memory file
indexed exactly once, with the corpus a full rebuild would give."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from structlog.testing import capture_logs

from memoryd.config import Config
from memoryd.retrieval import snapshot
from memoryd.retrieval.corpus import Corpus
from memoryd.retrieval.vectors_apart import ApartVectors
from memoryd.schema import Memory
from memoryd.store.files import WATCHED_DIRS
from tests.fakes import FakeEmbedder, never_ready_interpreter
from tests.retrieval.conftest import Harness

REPO = Path(__file__).resolve().parents[2]


async def open_root(root: Path) -> tuple[Harness, dict]:
    h = Harness(root, Config(), embedder=FakeEmbedder())
    summary = await h.engine.sync.startup()
    return h, summary


async def fill(h: Harness, n: int = 12) -> list[str]:
    ids = [await h.write(f"note {i} about the harbour and boat number {i}") for i in range(n)]
    start = datetime(2025, 3, 1, tzinfo=UTC)
    for i, line in enumerate(["Ann: we moved the boat to Kiel", "Bo: which pier?",
                              "Ann: pier seven, next to the ferry"]):
        ids.append(await h.write(line, session="chat-1", created_at=start + timedelta(minutes=i)))
    return ids


def snapshot_path(root: Path) -> Path:
    return root / "index" / "corpus.snapshot"


def rows(corpus: Corpus) -> dict[str, tuple]:
    """Each live row as what ranking reads, keyed by memory id."""
    out = {}
    postings: dict[int, dict[str, float]] = {}
    for term, (r, t) in corpus.postings.items():
        for row, tf in zip(r, t, strict=True):
            if corpus.alive[row]:
                postings.setdefault(row, {})[term] = tf
    for memory_id, row in corpus.row_of.items():
        meta = corpus.meta[row]
        prev, nxt = corpus.neighbours(memory_id)
        out[memory_id] = (meta, corpus.vectors("own", [row]).tobytes(),
                          corpus.vectors("ctx", [row]).tobytes(),
                          float(corpus.length[row]), prev, nxt, postings.get(row, {}),
                          float(corpus.created[row]), bool(corpus.superseded[row]))
    return out


async def assert_indexed_once(h: Harness, root: Path) -> None:
    """Every memory file indexed exactly once, and the corpus a full rebuild gives."""
    corpus = h.engine.stores.hybrid.corpus
    files = set(h.engine.files.iter_files(WATCHED_DIRS))  # trash/ holds history only
    records = h.engine.catalog.writer.stamps()
    assert files <= set(records) and all((root / p).is_file() for p in records)
    ids = h.engine.catalog.writer.ids()
    assert corpus.live == len(records) == len(ids)
    assert set(corpus.row_of) == ids
    assert not [i for i, n in Counter(m.id for m in corpus.meta if m).items() if n > 1]
    hybrid = h.engine.stores.hybrid
    await h.engine.stores.workers.write(hybrid.persist_deferred)  # as the daemon each second
    stored = [i for kind, _, got, _, _ in hybrid.vectors.scan(hybrid.model)
              if kind == "own" for i in got]
    assert sorted(stored) == sorted(ids)
    fresh = Harness(root, Config(), embedder=FakeEmbedder())  # what a rebuild makes
    try:
        reference = fresh.engine.stores.hybrid
        reference.reconcile(fresh.engine.catalog.writer.all_memories())
        assert rows(corpus) == rows(reference.corpus)
    finally:
        fresh.engine.close()


async def test_a_restart_resumes_from_the_snapshot(tmp_path):
    h, summary = await open_root(tmp_path)
    assert "snapshot_caught_up" not in summary  # a new root: built, then saved
    await fill(h)
    assert await h.engine.save_snapshot() is not None
    h.engine.close()
    h, summary = await open_root(tmp_path)
    assert summary["snapshot_caught_up"] == 0 and summary["vectors_embedded"] == 0
    assert summary["files_read"] == 0, "no file is read when every stamp matches"
    await assert_indexed_once(h, tmp_path)
    found = await h.call("memory_smart_search", query="pier seven next to the ferry")
    assert "pier seven" in found["memories"][0]["content"]
    h.engine.close()


@pytest.mark.parametrize("damage", ["missing", "corrupt", "truncated", "garbage"])
async def test_an_untrustworthy_snapshot_means_a_full_rebuild(tmp_path, damage, caplog):
    h, _ = await open_root(tmp_path)
    await fill(h)
    await h.engine.save_snapshot()
    h.engine.close()
    path = snapshot_path(tmp_path)
    data = bytearray(path.read_bytes())
    if damage == "missing":
        path.unlink()
    elif damage == "corrupt":  # one flipped byte in the middle of the vectors
        data[len(data) // 2] ^= 0x40
        path.write_bytes(bytes(data))
    elif damage == "truncated":
        path.write_bytes(bytes(data[: len(data) // 2]))
    else:
        path.write_bytes(os.urandom(4096))
    with pytest.raises(snapshot.Problem):
        h2 = Harness(tmp_path, Config(), embedder=FakeEmbedder())
        try:
            snapshot.read(path, h2.engine.catalog.epoch, h2.engine.catalog.generation,
                          FakeEmbedder.model_id, FakeEmbedder.dim)
        finally:
            h2.engine.close()
    h, summary = await open_root(tmp_path)
    assert "snapshot_caught_up" not in summary, "rebuilt, not resumed"
    await assert_indexed_once(h, tmp_path)
    h.engine.close()
    h, summary = await open_root(tmp_path)  # and the rebuild saved a good one
    assert summary["snapshot_caught_up"] == 0
    h.engine.close()


async def test_a_snapshot_whose_vector_store_is_gone_is_not_used(tmp_path):
    """The vector store deleted while the daemon was down (or vectors.url moved): its
    collections have new ids, so the start rebuilds and stores every vector again."""
    h, _ = await open_root(tmp_path)
    await fill(h)
    await h.engine.save_snapshot()
    h.engine.close()
    shutil.rmtree(tmp_path / "index" / "chroma")
    with capture_logs() as logs:
        h, summary = await open_root(tmp_path)
    assert "snapshot_caught_up" not in summary, "rebuilt, not resumed"
    assert any("of the vector store's collections are gone" in e.get("reason", "")
               for e in logs if e["event"] == "index.snapshot.unused")
    await assert_indexed_once(h, tmp_path)
    h.engine.close()


async def test_a_vector_store_set_aside_after_the_snapshot_was_used_removes_it(tmp_path):
    """The vector store opens on its own thread while start-up checks the snapshot
    against its SQLite file; if it then proves unreadable, it is set aside and starts
    empty: the snapshot is removed, not saved again, and the next start rebuilds and
    stores every vector."""
    h, _ = await open_root(tmp_path)
    await fill(h)
    await h.engine.save_snapshot()
    h.engine.close()
    h, summary = await open_root(tmp_path)
    assert "snapshot_caught_up" in summary
    h.engine.stores.hybrid.vectors.set_aside = tmp_path / "index" / "chroma.corrupt-1"
    await h.write("written after the store was set aside")
    with capture_logs() as logs:
        assert await h.engine.save_snapshot() is None
    assert not snapshot_path(tmp_path).exists()
    assert [e for e in logs if e["event"] == "index.snapshot.removed"]
    h.engine.close()
    h, summary = await open_root(tmp_path)
    assert "snapshot_caught_up" not in summary, "rebuilt, not resumed"
    await assert_indexed_once(h, tmp_path)
    h.engine.close()


async def test_a_stop_while_the_vector_store_starts_leaves_its_work_to_the_next_start(
        tmp_path, monkeypatch):
    """A stop soon after the first write does not wait for chroma to start: no vector is
    persisted and no snapshot saved (as after a kill), and the next start catches up."""
    h, _ = await open_root(tmp_path)
    await fill(h)
    await h.engine.save_snapshot()
    h.engine.close()
    h = Harness(tmp_path, Config(), embedder=FakeEmbedder(),
                vectors=ApartVectors(tmp_path / "index" / "chroma"))
    await h.engine.sync.startup()
    never_ready, said = never_ready_interpreter(tmp_path)
    monkeypatch.setattr(sys, "executable", str(never_ready))  # (the vector process's)
    await h.write("the harbour master is called Jens")  # starts the vector process
    int(said.read_text())  # (it runs, and will never be ready)
    monkeypatch.undo()
    with capture_logs() as logs:
        assert await h.engine.save_snapshot(stopping=True) is None
        h.engine.close()
    said_what = {e["event"] for e in logs}
    assert {"index.snapshot.skipped", "vectors.persist_skipped",
            "vectors.start_abandoned"} <= said_what
    assert not [e for e in logs if e["log_level"] == "error"]
    h, summary = await open_root(tmp_path)
    assert summary["snapshot_caught_up"] == 1
    await assert_indexed_once(h, tmp_path)
    found = await h.call("memory_smart_search", query="who is the harbour master")
    h.engine.close()
    assert "Jens" in found["memories"][0]["content"]


async def test_a_stale_snapshot_catches_up_on_what_changed_since(tmp_path):
    h, _ = await open_root(tmp_path)
    ids = await fill(h)
    await h.engine.save_snapshot()
    old = snapshot_path(tmp_path).read_bytes()
    new = await h.write("the harbour master is called Jens")
    await h.call("memory_update", id=ids[0], content="note 0: the boat was sold in May")
    await h.call("memory_tag", id=ids[1], add=["sold"])
    await h.call("memory_delete", id=ids[2])
    await h.write("Bo: and the ferry leaves at nine", session="chat-1",
                  created_at=datetime(2025, 3, 1, 0, 1, 30, tzinfo=UTC))
    h.engine.close()  # (a kill: no snapshot saved since)
    snapshot_path(tmp_path).write_bytes(old)
    h, summary = await open_root(tmp_path)
    assert summary["snapshot_caught_up"] >= 4 and summary["vectors_removed"] == 1
    await assert_indexed_once(h, tmp_path)
    corpus = h.engine.stores.hybrid.corpus
    assert new in corpus.row_of and ids[2] not in corpus.row_of
    assert "sold" in corpus.meta_of(ids[1]).tags
    found = await h.call("memory_smart_search", query="when was the boat sold")
    assert found["memories"][0]["id"] == ids[0]
    h.engine.close()


async def test_files_edited_while_the_daemon_was_down(tmp_path):
    h, _ = await open_root(tmp_path)
    ids = await fill(h)
    await h.engine.save_snapshot()
    record = h.engine.catalog.writer.record_by_id(ids[3])
    gone = h.engine.catalog.writer.record_by_id(ids[4])
    h.engine.close()
    edited = tmp_path / record.path
    edited.write_text(edited.read_text().replace("note 3 about the harbour",
                                                 "note 3 about the lighthouse keeper"))
    (tmp_path / gone.path).unlink()
    (tmp_path / "categories" / "knowledge" / "hand.md").write_text("Written by hand: tide tables")
    h, summary = await open_root(tmp_path)
    assert summary["files_read"] == 2 and summary["deleted"] == 1  # stamps changed: 2 read
    await assert_indexed_once(h, tmp_path)
    found = await h.call("memory_smart_search", query="lighthouse keeper")
    assert found["memories"][0]["id"] == ids[3]
    found = await h.call("memory_search", query="tide tables")
    assert len(found["memories"]) == 1
    # One gone and one new: as many memories as the snapshot holds, yet one is gone.
    assert summary["vectors_removed"] == 1 and ids[4] not in h.engine.stores.hybrid.corpus.row_of
    h.engine.close()


async def test_a_snapshot_of_another_catalog_is_never_trusted(tmp_path):
    h, _ = await open_root(tmp_path)
    await fill(h)
    await h.engine.save_snapshot()
    h.engine.close()
    for suffix in ("", "-wal", "-shm"):  # the keyword catalog is rebuilt from the files
        Path(f"{tmp_path}/index/keyword.sqlite{suffix}").unlink(missing_ok=True)
    h, summary = await open_root(tmp_path)
    assert "snapshot_caught_up" not in summary
    await assert_indexed_once(h, tmp_path)
    h.engine.close()


WRITER = """
import sys, time
from pathlib import Path
import numpy as np
from memoryd.retrieval import snapshot
from memoryd.retrieval.corpus import Corpus
from memoryd.schema import Memory
from tests.fakes import FakeEmbedder
corpus = Corpus(FakeEmbedder.dim)
vectors = np.random.default_rng(0).standard_normal((20000, FakeEmbedder.dim), np.float32)
vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
words = ["harbour", "boat", "pier", "ferry", "tide", "kiel"]
for i in range(20000):
    m = Memory(id=f"00000000-0000-4000-8000-{i:012d}", content=f"{words[i % 6]} {i}")
    corpus.put(m, [words[i % 6], str(i)], vectors[i])
generation = int(sys.argv[2])
print("ready", flush=True)
while True:
    captured = snapshot.capture(corpus, "epoch", generation, FakeEmbedder.model_id, set())
    snapshot.write(Path(sys.argv[1]), captured)
    print("wrote", generation, flush=True)
    generation += 1
"""


def test_a_kill_during_snapshot_writing_leaves_the_old_or_the_new(tmp_path):
    path = tmp_path / "corpus.snapshot"
    seen = set()
    for attempt in range(6):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(attempt * 1000)],
                                cwd=REPO, stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        if attempt % 2:  # after a write is complete, however slow the machine
            assert proc.stdout.readline().startswith("wrote ")
        time.sleep(0.01 + 0.03 * attempt)  # somewhere in a write, most likely
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if not path.exists():
            assert attempt % 2 == 0
            continue  # killed before the first rename: nothing is trusted
        corpus, header = snapshot.read(path, "epoch", 10**9, FakeEmbedder.model_id,
                                       FakeEmbedder.dim)
        assert corpus.live == 20000 and len(corpus.posting("harbour")[0]) == 3334
        seen.add(header.generation)
    snapshot.remove_temps(tmp_path, "corpus.snapshot")
    assert not list(tmp_path.glob(".corpus.snapshot.tmp-*"))
    assert seen, "no snapshot was ever completed"


def test_a_kill_mid_snapshot_then_a_start(tmp_path):
    """A daemon killed while writing its snapshot: the temp file is ignored and
    removed, the old snapshot is used, every file is indexed once."""
    import trio

    async def run() -> None:
        h, _ = await open_root(tmp_path)
        await fill(h)
        await h.engine.save_snapshot()
        await h.write("written after the snapshot: the mooring fee is 40 euros")
        h.engine.close()
        good = snapshot_path(tmp_path).read_bytes()
        partial = tmp_path / "index" / f".corpus.snapshot.tmp-{os.getpid() + 1}"
        partial.write_bytes(good[: len(good) // 3])
        h, summary = await open_root(tmp_path)
        assert summary["snapshot_caught_up"] == 1
        assert not partial.exists()
        await assert_indexed_once(h, tmp_path)
        h.engine.close()

    trio.run(run)


def test_columns_survive_the_round_trip(tmp_path):
    corpus = Corpus(8)
    for i in range(5):
        memory = Memory(id=f"00000000-0000-4000-8000-{i:012d}", content=f"x{i}",
                        tags=["a", f"t{i}"])
        corpus.put(memory, ["x", f"x{i}"], np.full(8, i / 10, dtype=np.float32))
    corpus.remove("00000000-0000-4000-8000-000000000002")  # a dead row is compacted away
    corpus.set_chunks("00000000-0000-4000-8000-000000000001",
                      np.ones((2, 8), dtype=np.float32), [(0, 1), (1, 2)])
    assert corpus.train_cells(force=True) == 4  # the dense index's cells, however few rows
    path = tmp_path / "s"
    snapshot.write(path, snapshot.capture(corpus, "e", 7, "m", {"x"}))
    loaded, header = snapshot.read(path, "e", 7, "m", 8)
    assert header.stale_context == ["x"] and loaded.live == 4
    assert rows(loaded) == rows(corpus)
    assert np.array_equal(loaded.chunks["00000000-0000-4000-8000-000000000001"][0],
                          np.ones((2, 8)))
    assert np.array_equal(loaded.centroids, corpus.centroids) and loaded.trained == 4
    assert np.array_equal(loaded.cell[:4], corpus.cell[:4]) and loaded.cell[:4].min() >= 0
    assert loaded.groups.upto == 4, "grouped by cell"
    assert np.array_equal(loaded.groups.order, corpus.groups.order)
    assert np.array_equal(loaded.groups.bounds, corpus.groups.bounds)
    corpus.cell[0] = 4  # a cell with no centroid: the snapshot does not fit together
    snapshot.write(path, snapshot.capture(corpus, "e", 7, "m", set()))
    with pytest.raises(snapshot.Problem, match="cells and their centroids differ"):
        snapshot.read(path, "e", 7, "m", 8)
    for epoch, generation, model in [("other", 7, "m"), ("e", 6, "m"), ("e", 7, "other")]:
        with pytest.raises(snapshot.Problem):
            snapshot.read(path, epoch, generation, model, 8)
