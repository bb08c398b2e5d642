"""The vector store (retrieval/vectors.py) against a real embedded chromadb: the client
opens on a thread of its own, off the start's path, and the collection ids read from
its SQLite file are the ones the client lists."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from memoryd.retrieval.vectors import VectorStore, _stored_collection_ids

REPO = Path(__file__).resolve().parents[2]


def test_collection_ids_from_the_file_are_the_clients(tmp_path):
    store = VectorStore(tmp_path / "chroma")
    vectors = np.eye(3, 384, dtype=np.float32)
    store.upsert("own", "global", ["a", "b", "c"], vectors, ["h1", "h2", "h3"], "m")
    store.upsert("ctx", "agent:x", ["a"], vectors[:1], ["h4"], "m")
    listed = sorted(str(c.id) for c in store.client.list_collections())
    assert len(listed) == 2
    assert _stored_collection_ids(tmp_path / "chroma" / "chroma.sqlite3") == listed
    assert store.collection_ids() == listed  # opened: through the client
    store.close()
    assert _stored_collection_ids(tmp_path / "nowhere" / "chroma.sqlite3") == []
    reopened = VectorStore(tmp_path / "chroma")  # has collections: a scan opens it
    assert sorted(kind for kind, *_ in reopened.scan()) == ["ctx", "own"]
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
        from memoryd.retrieval.vectors import VectorStore
        store = VectorStore(Path({str(tmp_path / "chroma")!r}))
        assert store.collection_ids() == []  # from the file, if there is one
        assert list(store.scan()) == []  # a new store has nothing to scan
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
