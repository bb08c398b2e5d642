"""Cells: the dense index for a store too big to score every row (an inverted file).

Spherical k-means over a sample of the own vectors gives about √n centroids; every
row carries the cell of its nearest centroid (the corpus column `cell`, -1 before
there are cells). A query scores the centroids, keeps the nearest `PROBE` share of
the cells (at least PROBE_MIN) and scores their rows exactly, with the search's
filters already applied: unlike a graph index searched before filtering, a narrow
filter never starves it. The corpus retrains the centroids when the store has
doubled since they were made; rows added in between join their nearest cell.
Everything is in the corpus (and its snapshot), so the first search after a start
waits for nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

Vectors = Callable[[np.ndarray], np.ndarray]  # rows -> their float32 vectors

TRAIN_FROM = 4096  # live rows before there are cells (below, every row is scored)
SAMPLE = 16384  # rows k-means learns from
ROUNDS = 8
PROBE = 0.1  # of the cells, nearest first
PROBE_MIN = 8  # cells, however few there are
BLOCK = 8192  # rows assigned at a time (bounds the float32 copy)


def count(rows: int) -> int:
    """Cells for a store of `rows`."""
    return min(4096, max(16, math.isqrt(rows)))


def train(vectors: Vectors, rows: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """(k, dim) unit float32 centroids of the vectors of `rows` (spherical k-means)."""
    rng = np.random.default_rng(seed)
    sample = vectors(np.sort(rng.choice(rows, min(len(rows), SAMPLE), replace=False)))
    k = min(k, len(sample))
    centroids = sample[rng.choice(len(sample), k, replace=False)].copy()
    for _ in range(ROUNDS):
        nearest = np.argmax(sample @ centroids.T, axis=1)
        order = np.argsort(nearest, kind="stable")
        members, starts = np.unique(nearest[order], return_index=True)
        sums = np.add.reduceat(sample[order], starts, axis=0)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        ok = norms[:, 0] > 0
        centroids[members[ok]] = sums[ok] / norms[ok]  # an empty cell keeps its centroid
    return centroids


def assign(centroids: np.ndarray, vectors: Vectors, rows: np.ndarray) -> np.ndarray:
    """The nearest centroid of each row's vector (int16 cell numbers)."""
    out = np.empty(len(rows), dtype=np.int16)
    for start in range(0, len(rows), BLOCK):
        block = vectors(rows[start:start + BLOCK])
        out[start:start + BLOCK] = np.argmax(block @ centroids.T, axis=1)
    return out


def probed(centroids: np.ndarray, query: np.ndarray) -> np.ndarray:
    """A lookup over cell numbers (index -1, the last, is "no cell yet"): True for the
    cells a query scores."""
    k = len(centroids)
    wanted = np.zeros(k + 1, dtype=np.bool_)
    wanted[-1] = True
    n = max(PROBE_MIN, math.ceil(k * PROBE))
    scores = centroids @ query
    wanted[np.argpartition(-scores, n - 1)[:n] if n < k else slice(None)] = True
    return wanted
