"""What the rest of the engine asks of the corpus, each under the corpus's read lock
taken here: the nearest memories of a scope to some vectors, a scope's centroid,
stored vectors by id, and how many vectors it holds. Callers never see rows, codes,
the lock or the columns (HybridIndex offers these)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memoryd.retrieval.corpus import Corpus
from memoryd.schema import KINDS


@dataclass(frozen=True)
class Neighbour:
    id: str
    cosine: float
    vector: np.ndarray  # its own stored vector (a copy)


def nearest(corpus: Corpus, scope: str, queries: np.ndarray, per_query: int, *,
            kind: str | None = None, not_kind: str | None = None,
            recent: int | None = None) -> list[list[Neighbour]]:
    """For each query (rows of `queries`, unit vectors), the `per_query` current
    memories of `scope` nearest to it, best first: of one `kind`, or not of `not_kind`,
    and among the `recent` latest only when given."""
    queries = np.atleast_2d(queries)
    with corpus.lock.read():
        n = corpus.size
        mask = corpus.current(scope)
        if kind is not None:
            mask &= corpus.kind[:n] == KINDS.index(kind)
        if not_kind is not None:
            mask &= corpus.kind[:n] != KINDS.index(not_kind)
        rows = np.flatnonzero(mask)
        if recent is not None:
            rows = rows[-recent:] if recent > 0 else rows[:0]
        if not len(rows):
            return [[] for _ in queries]
        sims = corpus.similarity("own", rows, np.ascontiguousarray(queries.T))
        out = []
        for column in range(sims.shape[1]):
            top = np.argsort(-sims[:, column], kind="stable")[:per_query]
            found = []
            for at in top.tolist():
                meta = corpus.meta[int(rows[at])]
                if meta is not None:
                    found.append(Neighbour(meta.id, float(sims[at, column]),
                                           corpus.vectors("own", [rows[at]])[0]))
            out.append(found)
        return out


def centroid(corpus: Corpus, scope: str, exclude: str | None = None) -> np.ndarray | None:
    """The mean own vector of the scope's current memories (but `exclude`); None when
    there is none."""
    with corpus.lock.read():
        mask = corpus.current(scope)
        row = corpus.row_of.get(exclude) if exclude is not None else None
        if row is not None:
            mask[row] = False
        if not mask.any():
            return None
        return corpus.mean("own", np.flatnonzero(mask))


def own_vectors(corpus: Corpus, ids: list[str]) -> dict[str, np.ndarray]:
    """The stored own vector of each memory that has one (copies)."""
    with corpus.lock.read():
        known = [i for i in ids if i in corpus.row_of]
        found = corpus.vectors("own", [corpus.row_of[i] for i in known])
        return dict(zip(known, found, strict=True))


def counts(corpus: Corpus) -> dict[str, int]:
    """Vectors ranking reads: memories' own, and chunks of long notes."""
    with corpus.lock.read():
        return {"own": corpus.live,
                "chunk": corpus.chunks.count()}
