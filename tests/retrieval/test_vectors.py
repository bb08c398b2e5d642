"""The vector store (retrieval/vectors.py) against a real embedded chromadb: the client
opens on a thread of its own, off the start's path, and the collection ids read from
its SQLite file are the ones the client lists; each vector carries its label, and an
older memoryd's collections (labels in metadata) are moved once."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from memoryd.retrieval.vectors import (
    LABEL,
    ChromaVectors,
    label,
    stored_collection_ids,
    text_hash,
    unlabel,
)
from tests.retrieval.conftest import older_collection

REPO = Path(__file__).resolve().parents[2]


def test_collection_ids_from_the_file_are_the_clients(tmp_path):
    store = ChromaVectors(tmp_path / "chroma")
    vectors = np.eye(3, 384, dtype=np.float32)
    hashes = [text_hash(t) for t in "abcd"]
    store.upsert("own", "global", ["a", "b", "c"], vectors, hashes[:3], "m")
    store.upsert("ctx", "agent:x", ["a"], vectors[:1], hashes[3:], "m")
    listed = sorted(str(c.id) for c in store.client.list_collections())
    assert len(listed) == 2
    assert stored_collection_ids(tmp_path / "chroma" / "chroma.sqlite3") == listed
    assert store.collection_ids() == listed  # opened: through the client
    store.close()
    assert stored_collection_ids(tmp_path / "nowhere" / "chroma.sqlite3") == []
    reopened = ChromaVectors(tmp_path / "chroma")  # has collections: a scan opens it
    assert sorted(kind for kind, *_ in reopened.scan("m")) == ["ctx", "own"]
    assert reopened.ready
    reopened.close()


def test_chromadb_is_not_imported_by_the_start_path(tmp_path):
    """Making a new store, reading its collection ids and scanning it import no chromadb
    (about 1 s of a start); `warm` opens the client on a thread of its own, which the
    first call that needs it waits for."""
    script = textwrap.dedent(f"""
        import json, sys, threading
        from pathlib import Path
        seen = []

        class Watch:
            def find_spec(self, name, path=None, target=None):
                if name == "chromadb":
                    seen.append(threading.current_thread().name)
                return None

        sys.meta_path.insert(0, Watch())
        from memoryd.retrieval.vectors import ChromaVectors
        store = ChromaVectors(Path({str(tmp_path / "chroma")!r}))
        assert store.collection_ids() == []  # from the file, if there is one
        assert list(store.scan("m")) == []  # a new store has nothing to scan
        before = list(seen)
        store.warm()
        store.client.list_collections()  # waits for the warming thread
        store.close()
        Path({str(tmp_path / "seen.json")!r}).write_text(json.dumps([before, seen]))
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "seen.json").read_text()) == [[], ["vectors-open"]]


def test_a_label_names_the_text_and_the_model():
    vectors = np.random.default_rng(1).standard_normal((3, 384)).astype(np.float32)
    hashes = [text_hash(t) for t in ("one", "two", "three")]
    stored = label(vectors, hashes, "model-a")
    assert stored.shape == (3, 384 + LABEL)
    back, got = unlabel(stored, "model-a")
    assert np.array_equal(back, vectors) and got == hashes
    assert unlabel(stored, "model-b")[1] == [None, None, None]  # another model's
    damaged = stored.copy()
    damaged[1, -1] = 0.5  # not a label: re-embedded, never trusted
    damaged[2, -3] = -1.0
    nudged = stored.copy()
    nudged[:, -LABEL:] *= np.float32(1 + 2e-7)  # a normalised and scaled back vector's
    assert unlabel(nudged, "model-a")[1] == hashes
    assert unlabel(damaged, "model-a")[1] == [hashes[0], None, None]
    with pytest.raises(ValueError):
        label(vectors[:1], ["not hex"], "model-a")


def test_the_label_is_stored_with_the_vector(tmp_path):
    """Rewriting a vector rewrites its label: chroma's upsert without metadata would keep
    the old metadata, which would vouch for the new vector."""
    store = ChromaVectors(tmp_path / "chroma")
    first, second = np.eye(2, 384, dtype=np.float32)
    store.upsert("own", "global", ["a"], first[None], [text_hash("old")], "m")
    store.upsert("own", "global", ["a"], second[None], [text_hash("new")], "m")
    [(kind, scope, ids, vectors, hashes)] = list(store.scan("m"))
    assert (kind, scope, ids, hashes) == ("own", "global", ["a"], [text_hash("new")])
    assert np.array_equal(vectors[0], second)
    store.close()


def test_an_older_store_is_moved_once(tmp_path):
    store = ChromaVectors(tmp_path / "chroma")
    vectors = np.random.default_rng(2).standard_normal((5, 384)).astype(np.float32)
    h = [text_hash(str(n)) for n in range(5)]
    older_collection(store.client, "own", "global", ["a", "b", "c", "d", "e"], vectors, [
        {"h": h[0], "m": "m"}, {"h": h[1], "m": "m"}, {"h": h[2], "m": "other"},
        {"h": "bad", "m": "m"}, {"h": h[4], "m": "m"}])
    older_collection(store.client, "chunk", "agent:x", ["a#0"], vectors[:1],
                      [{"h": h[0], "m": "m", "of": "a"}])
    newer = np.ones((1, 384), dtype=np.float32)
    store.upsert("own", "global", ["e"], newer, [text_hash("rewritten")], "m")  # since
    assert store.migrate("m") == 3  # a, b and a#0: not another model's, a bad hash, e
    names = sorted(c.name for c in store.client.list_collections())
    assert all("-labelled-" in n for n in names) and len(names) == 2
    got = {(k, s, i): (v, x) for k, s, ids, vs, xs in store.scan("m")
           for i, v, x in zip(ids, vs, xs, strict=True)}
    assert sorted(got) == [("chunk", "agent:x", "a#0"), ("own", "global", "a"),
                           ("own", "global", "b"), ("own", "global", "e")]
    assert got[("own", "global", "b")][1] == h[1]
    assert np.allclose(got[("own", "global", "b")][0], vectors[1], atol=1e-6)
    assert got[("own", "global", "e")][1] == text_hash("rewritten")  # the newer stays
    assert store.migrate("m") == 0  # nothing older left
    store.close()
    # chroma leaves a dropped collection's segment directories: they are removed
    db = sqlite3.connect(tmp_path / "chroma" / "chroma.sqlite3")
    segments = {row[0] for row in db.execute("SELECT id FROM segments")}
    db.close()
    folders = {p.name for p in (tmp_path / "chroma").iterdir() if p.is_dir()}
    assert folders <= segments


def test_a_dropped_collections_segments_are_removed(tmp_path):
    store = ChromaVectors(tmp_path / "chroma")
    vectors = np.random.default_rng(3).standard_normal((2000, 384)).astype(np.float32)
    older_collection(store.client, "own", "global", [str(n) for n in range(2000)], vectors,
                      [{"h": text_hash(str(n)), "m": "m"} for n in range(2000)])
    [older] = store.client.list_collections()
    segments = store._segment_ids(str(older.id))
    store.close()  # chroma writes its index out
    store = ChromaVectors(tmp_path / "chroma")
    assert any((tmp_path / "chroma" / s).is_dir() for s in segments)
    assert store.migrate("m") == 2000
    assert not any((tmp_path / "chroma" / s).exists() for s in segments)
    assert sum(len(b[2]) for b in store.scan("m")) == 2000
    store.close()


def test_a_forced_rebuild_drops_an_older_store(tmp_path):
    store = ChromaVectors(tmp_path / "chroma")
    older_collection(store.client, "own", "global", ["a"], np.eye(1, 384, dtype=np.float32),
                      [{"h": text_hash("a"), "m": "m"}])
    assert store.migrate(None) == 0
    assert store.client.list_collections() == []
    store.close()


def test_a_chroma_whose_tables_are_not_as_read_still_migrates(tmp_path, monkeypatch):
    """chroma's tables are read in one place (`_stored_column`); when they are not what
    it reads, the move still happens and only the dropped folders' removal is skipped."""
    from memoryd.retrieval import vectors as module

    store = ChromaVectors(tmp_path / "chroma")
    older_collection(store.client, "own", "global", ["a"], np.eye(1, 384, dtype=np.float32),
                     [{"h": text_hash("a"), "m": "m"}])

    def renamed(db, sql, *args, timeout):
        raise sqlite3.OperationalError("no such table: segments")

    monkeypatch.setattr(module, "_stored_column", renamed)
    assert store.migrate("m") == 1
    assert [i for _, _, ids, _, _ in store.scan("m") for i in ids] == ["a"]
    store.close()


def test_an_unused_client_is_released_and_opens_again_at_the_next_use(tmp_path):
    """Closed after `idle` seconds unused (chroma's indexes freed), not before; the
    next write opens it again and nothing written is lost."""
    store = ChromaVectors(tmp_path / "chroma")
    vectors = np.eye(4, 384, dtype=np.float32)
    hashes = [text_hash(t) for t in "abcd"]
    assert not store.release(0.0)  # never opened: nothing to release
    store.upsert("own", "global", ["a", "b"], vectors[:2], hashes[:2], "m")
    assert not store.release(3600.0)  # used a moment ago
    assert 0 <= store.unused_for() < 3600
    assert store.release(0.0) and not store.ready and store.unused_for() is None
    assert not store.release(0.0)  # released already
    store.upsert("own", "global", ["c", "d"], vectors[2:], hashes[2:], "m")
    assert store.ready
    scanned = {kind: ids for kind, _, ids, _, _ in store.scan("m")}
    assert sorted(scanned["own"]) == ["a", "b", "c", "d"]
    store.close()

