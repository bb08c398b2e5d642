"""Postings: term -> (rows, term frequencies), in flat arrays.

Most of it is frozen: one array of every posting's rows, one of their frequencies, and
the offsets where each term's run starts (CSR). That is what the snapshot stores, so a
start loads it as three arrays and a term list instead of building 100k small arrays.
Rows added since go to a small growing part, a pair of `array`s per term; `freeze`
merges it in (the snapshot's capture does, as it writes the merged arrays anyway) and
`remap` renumbers both when the corpus compacts. Within a term, rows ascend.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from operator import itemgetter

import numpy as np


class Postings:
    def __init__(self, terms: list[str] | None = None, offsets: np.ndarray | None = None,
                 rows: np.ndarray | None = None, tfs: np.ndarray | None = None) -> None:
        """The frozen part from flat arrays (as the snapshot holds them); they are
        owned from here on."""
        self.terms: list[str] = terms or []
        self.index: dict[str, int] = {t: k for k, t in enumerate(self.terms)}
        self.offsets = (offsets if offsets is not None
                        else np.zeros(1, dtype=np.int64)).astype(np.int64, copy=False)
        self.rows = rows if rows is not None else np.zeros(0, dtype=np.int32)
        self.tfs = tfs if tfs is not None else np.zeros(0, dtype=np.float32)
        if len(self.offsets) != len(self.terms) + 1 or len(self.index) != len(self.terms):
            raise ValueError("postings and terms differ in number")
        if (len(self.rows) != len(self.tfs) or int(self.offsets[0]) != 0
                or int(self.offsets[-1]) != len(self.rows)
                or bool(np.any(np.diff(self.offsets) < 0))):
            raise ValueError("the postings' offsets do not fit their rows")
        self.growing: dict[str, tuple[array[int], array[float]]] = {}

    def __len__(self) -> int:
        return len(self.index) + sum(1 for t in self.growing if t not in self.index)

    def nbytes(self) -> int:
        """The bytes its arrays hold, the frozen part's and the growing tail's (a row
        and its term frequency, 4 bytes each)."""
        frozen = self.offsets.nbytes + self.rows.nbytes + self.tfs.nbytes
        return frozen + 8 * sum(map(len, map(itemgetter(0), self.growing.values())))

    def items(self) -> Iterator[tuple[str, tuple[np.ndarray, np.ndarray]]]:
        """Every term with its rows and frequencies."""
        for term in [*self.terms, *(t for t in self.growing if t not in self.index)]:
            got = self.get(term)
            assert got is not None
            yield term, got

    def add(self, row: int, counts: Iterable[tuple[str, int]]) -> None:
        for term, tf in counts:
            rows, tfs = self.growing.setdefault(term, (array("i"), array("f")))
            rows.append(row)
            tfs.append(tf)

    def get(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The term's rows and frequencies (fresh arrays or read-only views: never
        write into them)."""
        k = self.index.get(term)
        grown = self.growing.get(term)
        if k is None and grown is None:
            return None
        parts_r, parts_t = [], []
        if k is not None:
            a, b = int(self.offsets[k]), int(self.offsets[k + 1])
            parts_r.append(self.rows[a:b])
            parts_t.append(self.tfs[a:b])
        if grown is not None:
            # Copies: a view left alive would stop the arrays from growing.
            parts_r.append(np.frombuffer(grown[0], dtype=np.int32).copy())
            parts_t.append(np.frombuffer(grown[1], dtype=np.float32).copy())
        if len(parts_r) == 1:
            return parts_r[0], parts_t[0]
        return np.concatenate(parts_r), np.concatenate(parts_t)

    def freeze(self) -> None:
        """Merge the growing part into the flat arrays."""
        if not self.growing:
            return
        terms = list(self.terms)
        extra_terms: list[int] = []
        extra_rows: list[np.ndarray] = []
        extra_tfs: list[np.ndarray] = []
        for term, (grown_rows, grown_tfs) in self.growing.items():
            k = self.index.get(term)
            if k is None:
                k = len(terms)
                terms.append(term)
            extra_terms.append(k)
            extra_rows.append(np.frombuffer(grown_rows, dtype=np.int32))
            extra_tfs.append(np.frombuffer(grown_tfs, dtype=np.float32))
        lengths = np.fromiter((len(r) for r in extra_rows), dtype=np.int64,
                              count=len(extra_rows))
        owner = np.concatenate([self._owners(),
                                np.repeat(np.array(extra_terms, dtype=np.int64), lengths)])
        rows = np.concatenate([self.rows, *extra_rows]).astype(np.int32, copy=False)
        tfs = np.concatenate([self.tfs, *extra_tfs]).astype(np.float32, copy=False)
        # Stable: a term's frozen rows stay before the ones added since (all newer).
        order = np.argsort(owner, kind="stable")
        self._set(terms, owner[order], rows[order], tfs[order])
        self.growing = {}

    def remap(self, remap: np.ndarray) -> None:
        """Renumber rows (`remap[old]` is the new row, -1 dropped); terms left without
        rows are dropped."""
        self.freeze()
        mapped = remap[self.rows]
        keep = mapped >= 0
        owner = self._owners()[keep]
        used = np.unique(owner)
        renumber = np.full(len(self.terms), -1, dtype=np.int64)
        renumber[used] = np.arange(len(used))
        self._set([self.terms[k] for k in used], renumber[owner],
                  mapped[keep].astype(np.int32), self.tfs[keep])

    def flat(self) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        """(terms, offsets, rows, tfs), the growing part merged in first."""
        self.freeze()
        return self.terms, self.offsets, self.rows, self.tfs

    def _owners(self) -> np.ndarray:
        """Each frozen posting's term number."""
        return np.repeat(np.arange(len(self.terms), dtype=np.int64), np.diff(self.offsets))

    def _set(self, terms: list[str], owner: np.ndarray, rows: np.ndarray,
             tfs: np.ndarray) -> None:
        counts = np.bincount(owner, minlength=len(terms)) if len(owner) else np.zeros(
            len(terms), dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.terms = terms
        self.index = {t: k for k, t in enumerate(terms)}
        self.rows, self.tfs = rows, tfs
