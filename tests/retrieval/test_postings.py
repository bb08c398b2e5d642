"""Postings: flat frozen arrays plus a growing part, merged and renumbered."""

from __future__ import annotations

import random

import numpy as np
import pytest

from memoryd.retrieval.postings import Postings


def _model(p: Postings, terms: set[str]) -> dict[str, list[tuple[int, float]]]:
    out = {}
    for t in terms:
        got = p.get(t)
        if got is not None:
            out[t] = list(zip(got[0].tolist(), got[1].tolist(), strict=True))
    return out


def test_matches_a_plain_dict_through_adds_freezes_and_remaps() -> None:
    rng = random.Random(7)
    vocab = [f"t{i}" for i in range(40)]
    p, want = Postings(), {}
    row = 0
    for step in range(12):
        for _ in range(rng.randrange(1, 30)):
            counts = {t: rng.randrange(1, 4) for t in rng.sample(vocab, rng.randrange(0, 6))}
            p.add(row, counts.items())
            for t, tf in counts.items():
                want.setdefault(t, []).append((row, float(tf)))
            row += 1
        if step % 3 == 1:
            p.freeze()
            assert not p.growing
        if step % 4 == 3:  # compaction: drop about a third of the rows
            keep = sorted(rng.sample(range(row), k=row * 2 // 3))
            remap = np.full(row, -1, dtype=np.int64)
            remap[keep] = np.arange(len(keep))
            p.remap(remap)
            want = {t: [(int(remap[r]), f) for r, f in v if remap[r] >= 0]
                    for t, v in want.items()}
            want = {t: v for t, v in want.items() if v}
            row = len(keep)
        assert _model(p, set(vocab)) == want
        assert len(p) == len(want)
    terms, offsets, rows, tfs = p.flat()
    again = Postings(list(terms), offsets.copy(), rows.copy(), tfs.copy())
    assert _model(again, set(vocab)) == want
    assert p.get("never seen") is None


@pytest.mark.parametrize("offsets", [[0, 2], [0, 3, 2], [1, 3], [0, 2, 5]])
def test_flat_arrays_that_do_not_fit_are_refused(offsets: list[int]) -> None:
    rows = np.arange(3, dtype=np.int32)
    with pytest.raises(ValueError):
        Postings(["a", "b"], np.array(offsets, dtype=np.int64), rows,
                 np.ones(3, dtype=np.float32))


def test_duplicate_terms_are_refused() -> None:
    with pytest.raises(ValueError):
        Postings(["a", "a"], np.array([0, 1, 2]), np.arange(2, dtype=np.int32),
                 np.ones(2, dtype=np.float32))
