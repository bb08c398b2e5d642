"""The snapshot keeps readings of each text made by the language rules (index terms,
names, whether a turn tells something). A rule changed means those readings are stale:
the snapshot's header carries a digest of every module that makes them (and of the rows'
layout), and a snapshot of other rules is refused (start-up reads every row again). No
number to bump by hand."""

from __future__ import annotations

import grimp
import numpy as np
import pytest

from memoryd.retrieval import snapshot
from memoryd.retrieval.corpus import Corpus
from memoryd.schema import Memory

# Where language rules live: the modules whose change changes a reading of a text.
LANGUAGE = ("memoryd.lang.",)
# What the snapshot stores readings of: the corpus's rows, and the index terms.
READERS = ("memoryd.retrieval.corpus", "memoryd.lang.terms")


def test_every_rule_module_the_snapshot_keeps_readings_of_is_digested():
    graph = grimp.build_graph("memoryd")
    read = set(READERS)
    for module in READERS:
        read |= graph.find_upstream_modules(module)
    used = {m for m in read if m.startswith(LANGUAGE)}
    assert used == set(snapshot.READ_BY_RULES), (sorted(used - set(snapshot.READ_BY_RULES)),
                                                 sorted(set(snapshot.READ_BY_RULES) - used))


def _corpus() -> Corpus:
    corpus = Corpus(dim=4)
    corpus.put(Memory(id="m1", content="Ann moved to Lisbon"), ["ann", "lisbon"],
               np.ones(4, dtype=np.float32), "h1")
    return corpus


def test_a_snapshot_of_other_rules_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "corpus.snapshot"
    snapshot.write(path, snapshot.capture(_corpus(), "epoch", 3, "model", set()))
    corpus, header = snapshot.read(path, "epoch", 3, "model", 4)
    assert header.rules == snapshot.rules_digest() and corpus.size == 1
    monkeypatch.setattr(snapshot, "rules_digest", lambda: "another-rule-set")
    with pytest.raises(snapshot.Problem, match="language rules changed"):
        snapshot.read(path, "epoch", 3, "model", 4)


def test_the_rows_layout_is_digested_too(monkeypatch):
    """A column or a RowMeta field added (a new signal a row keeps) changes the digest:
    a snapshot of the old layout is read again, with no number to bump by hand."""
    before = snapshot.rules_digest()
    monkeypatch.setattr(snapshot, "COLUMNS", {**snapshot.COLUMNS, "signal": (np.float32, 0)})
    snapshot.rules_digest.cache_clear()
    try:
        assert snapshot.rules_digest() != before
    finally:
        monkeypatch.undo()
        snapshot.rules_digest.cache_clear()
    assert snapshot.rules_digest() == before
