"""The corpus's rows grouped by their cell (cells.py): a search reads the runs of the
cells it probes instead of looking up every row's cell. The rows added since the last
grouping are the tail, looked up one by one; the corpus groups again when a grouped
row changes cell, when it renumbers its rows, and when the tail outgrows an eighth
of the rows (a regrouping of 130,000 rows costs about as much as two searches save).
Callers hold the corpus's lock."""

from __future__ import annotations

import numpy as np

GROUP_TAIL = 1024  # rows added since the cells were grouped, at least, before regrouping


class CellGroups:
    def __init__(self) -> None:
        # Cell c's run is order[bounds[c + 1]:bounds[c + 2]], the rows without a cell
        # first; `upto`: the rows grouped (0: none).
        self.order = np.zeros(0, dtype=np.int32)
        self.bounds = np.zeros(0, dtype=np.int64)
        self.upto = 0

    def clear(self) -> None:
        self.order, self.bounds, self.upto = self.order[:0], self.bounds[:0], 0

    def group(self, cell: np.ndarray, cells: int) -> None:
        """Group the rows whose cells are `cell` (one per row; -1: none) among `cells`."""
        self.order = np.argsort(cell, kind="stable").astype(np.int32)  # a radix sort
        self.bounds = np.searchsorted(cell[self.order], np.arange(-1, cells + 1))
        self.upto = len(cell)

    def due(self, lowest_changed: int, size: int) -> bool:
        """Whether rows from `lowest_changed` on getting new cells call for grouping
        again, in a corpus of `size` rows."""
        return (not self.upto or lowest_changed < self.upto
                or size - self.upto > max(GROUP_TAIL, self.upto // 8))

    def rows(self, wanted: np.ndarray, mask: np.ndarray, cell: np.ndarray) -> np.ndarray:
        """The rows within `mask` whose cell is `wanted` (cells.probed; `cell`: every
        row's), ascending: the wanted cells' runs, and the tail looked up."""
        n = len(mask)
        found, upto = [], 0
        if self.upto and self.upto <= n:
            upto = self.upto
            runs = [self.order[:self.bounds[1]]]  # the rows without a cell yet
            runs += [self.order[self.bounds[c + 1]:self.bounds[c + 2]]
                     for c in np.flatnonzero(wanted[:-1]).tolist()]
            grouped = np.concatenate(runs).astype(np.int64)
            found.append(grouped[mask[grouped]])
        found.append(np.flatnonzero(wanted[cell[upto:n]] & mask[upto:n]) + upto)
        return np.sort(np.concatenate(found))
