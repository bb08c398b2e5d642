"""Long notes' chunk vectors (retrieval/chunks.py cuts the notes), by memory id, and
their scoring: all chunks stacked into one matrix on demand, each chunk with its
note's corpus row.

The stack holds row numbers: the corpus drops it (`unstack`) when it renumbers its
rows, and every change here drops it too. Callers hold the corpus's lock, as for
every other column of it."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

Span = tuple[int, int]  # (start, end) in the note's content


class ChunkVectors:
    def __init__(self) -> None:
        self._by_id: dict[str, tuple[np.ndarray, list[Span]]] = {}
        # (vectors, their notes' rows, index within the note, the note's place in owners)
        self._stacked: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._owners: list[str] = []

    def nbytes(self) -> int:
        """The bytes its vectors hold, a note's and the stacked copy the scoring reads."""
        stacked = sum(a.nbytes for a in self._stacked) if self._stacked is not None else 0
        return stacked + sum(vectors.nbytes for vectors, _ in self._by_id.values())

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._by_id

    def __getitem__(self, memory_id: str) -> tuple[np.ndarray, list[Span]]:
        return self._by_id[memory_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_id)

    def __bool__(self) -> bool:
        return bool(self._by_id)

    def get(self, memory_id: str) -> tuple[np.ndarray, list[Span]] | None:
        return self._by_id.get(memory_id)

    def count(self) -> int:
        """How many chunk vectors there are, over every note."""
        return sum(len(vectors) for vectors, _ in self._by_id.values())

    def put(self, memory_id: str, vectors: np.ndarray, spans: list[Span]) -> None:
        """A long note's chunk vectors (none: it is scored by its own vector only)."""
        if spans:
            self._by_id[memory_id] = (np.asarray(vectors, dtype=np.float32), spans)
        else:
            self._by_id.pop(memory_id, None)
        self._stacked = None

    def drop(self, memory_id: str) -> None:
        if self._by_id.pop(memory_id, None) is not None:
            self._stacked = None

    def unstack(self) -> None:
        """The rows were renumbered: stack again when next asked."""
        self._stacked = None

    def best(self, query: np.ndarray, rows: np.ndarray, row_of: dict[str, int],
             size: int) -> tuple[np.ndarray, np.ndarray]:
        """For `rows` (of a corpus of `size` rows): the best chunk score (-inf for rows
        without chunks) and which chunk it was (-1: none; `at` tells its index and
        span)."""
        best = np.full(len(rows), -np.inf, dtype=np.float32)
        which = np.full(len(rows), -1, dtype=np.int64)
        if not self._by_id or not len(rows):
            return best, which
        matrix, owner_rows, _, _ = self._stack(row_of)
        position = np.full(size, -1, dtype=np.int64)
        position[rows] = np.arange(len(rows))
        at = position[owner_rows]
        picked = np.flatnonzero(at >= 0)
        if len(picked):
            scores = matrix[picked] @ query
            np.maximum.at(best, at[picked], scores)
            won = scores >= best[at[picked]]
            which[at[picked][won]] = picked[won]
        return best, which

    def near_rows(self, query: np.ndarray, n: int, row_of: dict[str, int]) -> set[int]:
        """Rows of the long notes whose chunks are the `n` closest to `query` (exact:
        chunks are few next to memories)."""
        if not self._by_id:
            return set()
        matrix, owner_rows, _, _ = self._stack(row_of)
        scores = matrix @ query
        top = np.argpartition(-scores, n)[:n] if len(scores) > n else np.arange(len(scores))
        return {int(r) for r in owner_rows[top]}

    def at(self, k: int, row_of: dict[str, int]) -> tuple[int, Span]:
        """(index within its note, span) of stacked chunk `k`."""
        _, _, index, owner = self._stack(row_of)
        chunk = int(index[k])
        return chunk, self._by_id[self._owners[int(owner[k])]][1][chunk]

    def _stack(self, row_of: dict[str, int]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if self._stacked is None:
            self._owners = list(self._by_id)
            sizes = [len(self._by_id[o][0]) for o in self._owners]
            self._stacked = (
                np.concatenate([self._by_id[o][0] for o in self._owners]),
                np.repeat(np.array([row_of[o] for o in self._owners], dtype=np.int64),
                          sizes),
                np.concatenate([np.arange(n) for n in sizes]),
                np.repeat(np.arange(len(self._owners)), sizes))
        return self._stacked
