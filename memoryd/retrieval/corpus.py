"""Corpus: the in-memory mirror that ranking reads, one row per memory.

Rows hold the own and context embeddings, lexical postings (Snowball stems with
term frequencies), lengths, scope and filter codes, and for conversation turns
the previous/next turn of the same scope and session. An update appends a new
row and marks the old one dead; `compact` squeezes dead rows out. The writer thread
holds `lock.write()` while mutating; readers hold `lock.read()` while scoring, many
at once (memoryd/rwlock.py).
"""

from __future__ import annotations

import bisect
from collections import Counter

import msgspec
import numpy as np

from memoryd.filters import Filters
from memoryd.retrieval import cells, int8dot
from memoryd.retrieval.postings import Postings
from memoryd.retrieval.shared_work import SharedWork
from memoryd.rwlock import RWLock
from memoryd.schema import CATEGORIES, KINDS, TYPES, Memory

# The per-row columns: numpy arrays of `capacity` rows, each with its dtype and the
# value of an empty row. `own` and `ctx` hold one vector a row as int8 codes times the
# row's `*_scale`: a quarter of the memory of float32, a cosine off by under 2e-3, and
# fast to score (`similarity`; LoCoMo R@10 is unchanged, bench/README.md). Read them through
# `vectors` and `similarity`, never the codes.
COLUMNS: dict[str, tuple[type, object]] = {
    "own": (np.int8, 0), "own_scale": (np.float32, 0),
    "ctx": (np.int8, 0), "ctx_scale": (np.float32, 0),
    "length": (np.float32, 0),  # index terms
    "prev": (np.int32, -1), "next": (np.int32, -1),  # a turn's neighbours in its session
    "alive": (np.bool_, False), "scope": (np.int32, -1), "created": (np.float64, 0),
    "importance": (np.float32, 0), "category": (np.int8, -1), "kind": (np.int8, -1),
    "type": (np.int8, -1), "organized": (np.bool_, False), "expires": (np.float64, np.inf),
    "superseded": (np.bool_, False),
    "valid_until": (np.float64, np.inf),  # when a superseded fact stopped being current
    "compressed": (np.bool_, False),
    "session_code": (np.int32, -1),  # a code per (scope, session) for turns, else -1
    "cell": (np.int16, -1),  # the own vector's nearest centroid (cells.py); -1: none yet
}
_VECTORS = ("own", "ctx")  # (capacity, dim) columns
# Rows scored at once by `similarity` (at most; the blocks are of equal size): 0.75 MB
# of int8 codes, which stay in the core's cache (13,000 rows: 2.0 ms, in blocks of
# 8,192: 2.2-2.4 ms), and blocks small enough to share between two threads.
SCORE_BLOCK = 2048
GROUP_TAIL = 1024  # rows added since the cells were grouped, at least, before regrouping


class RowMeta(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """A row's metadata (as the snapshot stores it too: an array per row). It holds no
    reference that could form a cycle, so the garbage collector does not track it: 100k
    rows add nothing to a collection."""

    id: str
    scope: str
    session: str | None
    is_turn: bool
    tags: frozenset[str]
    compressed: bool
    expires_at: float | None
    superseded: bool
    text_hash: str = ""


def _top(rows: np.ndarray, scores: np.ndarray, n: int) -> np.ndarray:
    """The `n` rows with the highest scores (in no order)."""
    if len(rows) <= n:
        return rows
    return rows[np.argpartition(-scores, n - 1)[:n]]


def _superseded(memory: Memory) -> bool:
    return memory.replaced_by is not None or memory.superseded_at is not None


class Corpus:
    # The COLUMNS, made by `_alloc` (declared here for the type checker; a test keeps
    # this list and COLUMNS the same).
    own: np.ndarray
    own_scale: np.ndarray
    ctx: np.ndarray
    ctx_scale: np.ndarray
    length: np.ndarray
    prev: np.ndarray
    next: np.ndarray
    alive: np.ndarray
    scope: np.ndarray
    created: np.ndarray
    importance: np.ndarray
    category: np.ndarray
    kind: np.ndarray
    type: np.ndarray
    organized: np.ndarray
    expires: np.ndarray
    superseded: np.ndarray
    valid_until: np.ndarray
    compressed: np.ndarray
    session_code: np.ndarray
    cell: np.ndarray

    def __init__(self, dim: int, capacity: int = 1024) -> None:
        self.dim = dim
        self.lock = RWLock()
        self.size = 0
        self.live = 0
        self.row_of: dict[str, int] = {}
        self.meta: list[RowMeta | None] = []
        self._alloc(capacity)
        self.postings = Postings()
        self.scope_codes: dict[str, int] = {}
        self.sessions: dict[tuple[str, str], list[tuple[float, str]]] = {}
        self.session_codes: dict[tuple[str, str], int] = {}
        # Long notes: their chunks' vectors and (start, end) spans (retrieval/chunks.py),
        # stacked on demand for scoring.
        self.chunks: dict[str, tuple[np.ndarray, list[tuple[int, int]]]] = {}
        self._stacked: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        # The dense index's centroids (cells.py), and how many live rows they were
        # trained on: they are retrained once the store has doubled.
        self.centroids: np.ndarray | None = None
        self.trained = 0
        # The rows below `upto` by cell (`order`; cell c's run is order[bounds[c + 1]:
        # bounds[c + 2]], the rows without a cell first): a search reads its cells'
        # rows instead of looking up every row's cell. Rows added since are the tail.
        self._grouped: tuple[np.ndarray, np.ndarray, int] | None = None
        self._field_length: tuple[float, np.ndarray] | None = None  # until a change

    def _alloc(self, capacity: int) -> None:
        for name, (dtype, empty) in COLUMNS.items():
            shape = (capacity, self.dim) if name in _VECTORS else (capacity,)
            new: np.ndarray = (np.zeros(shape, dtype=dtype) if not empty  # calloc
                               else np.full(shape, empty, dtype=dtype))
            old = self.__dict__.get(name)
            if old is not None:
                new[: len(old)] = old
            setattr(self, name, new)
        self.capacity = capacity

    def current(self, scope: str) -> np.ndarray:
        """Mask over the rows (hold `lock.read()`): the scope's live memories that are not
        superseded."""
        n = self.size
        code = self.scope_codes.get(scope)
        if code is None:
            return np.zeros(n, dtype=np.bool_)
        current: np.ndarray = self.alive[:n] & (self.scope[:n] == code) & ~self.superseded[:n]
        return current

    def mask(self, filters: Filters) -> np.ndarray:
        """`filters` as a mask over the rows (hold `lock.read()`): the compilation that
        the catalog's SQL (store/catalog.py `where`) must agree with."""
        if filters.source is not None:
            raise ValueError("the corpus keeps no memory's source: filter by it in SQL")
        n = self.size
        if filters.as_of is None:
            mask = self.alive[:n] & ~self.superseded[:n]
        else:
            mask = (self.alive[:n] & (self.created[:n] <= filters.as_of)
                    & (self.valid_until[:n] > filters.as_of))
        mask &= self.expires[:n] > filters.at()
        if not filters.include_compressed:
            mask &= ~self.compressed[:n]
        if filters.scopes is not None:
            codes = [self.scope_codes[s] for s in filters.scopes if s in self.scope_codes]
            mask &= np.isin(self.scope[:n], codes)
        for column, names in (("category", CATEGORIES), ("type", TYPES), ("kind", KINDS)):
            value = getattr(filters, column)
            if value is not None:
                mask &= getattr(self, column)[:n] == names.index(value)
        if filters.not_kind is not None:
            mask &= self.kind[:n] != KINDS.index(filters.not_kind)
        if filters.phase is not None:
            mask &= self.organized[:n] == (filters.phase == "organized")
        if filters.since is not None:
            mask &= self.created[:n] >= filters.since.timestamp()
        if filters.until is not None:
            mask &= self.created[:n] < filters.until.timestamp()
        if filters.tags or filters.session is not None:  # rarer: a pass over the survivors
            wanted = set(filters.tags)
            for row in np.flatnonzero(mask).tolist():
                meta = self.meta[row]
                if meta is None or (wanted and not wanted <= meta.tags) or (
                        filters.session is not None and meta.session != filters.session):
                    mask[row] = False
        narrowed: np.ndarray = mask
        return narrowed

    def scope_code(self, scope: str) -> int:
        code = self.scope_codes.get(scope)
        if code is None:
            code = self.scope_codes[scope] = len(self.scope_codes)
        return code

    # -- mutation (hold `lock.write()`) ----------------------------------------------
    def put(self, memory: Memory, terms: list[str], own: np.ndarray, text_hash: str = "",
            ctx: np.ndarray | None = None, place: bool = True) -> int:
        """Add (or replace) a memory's row; the context vector defaults to the own one.
        With `place=False` the row gets its cell from `place`, which the caller runs for
        many rows at once (one matrix product instead of one a row: a put costs a
        quarter to a half as much)."""
        self.remove(memory.id)
        self._field_length = None
        if self.size == self.capacity:
            self._alloc(self.capacity * 2)
        row = self.size
        self.size += 1
        self.live += 1
        self.row_of[memory.id] = row
        is_turn = memory.kind == "turn" and memory.session is not None
        self.meta.append(None)
        self._describe(row, memory, is_turn, text_hash)
        self._store("own", row, own)
        if ctx is None:
            self.ctx[row], self.ctx_scale[row] = self.own[row], self.own_scale[row]
        else:
            self._store("ctx", row, ctx)
        if place:
            self.place([row])
        self.length[row] = len(terms)
        self.alive[row] = True
        self.scope[row] = self.scope_code(memory.scope)
        self.session_code[row] = (self.session_codes.setdefault(
            (memory.scope, memory.session), len(self.session_codes))
            if is_turn and memory.session is not None else -1)
        self.postings.add(row, Counter(terms).items())
        if is_turn:
            assert memory.session is not None
            turns = self.sessions.setdefault((memory.scope, memory.session), [])
            bisect.insort(turns, (self.created[row], memory.id))
            self._relink(memory.scope, memory.session)
        return row

    def refresh(self, memory: Memory) -> bool:
        """Update a live row's filters in place (same text, scope and session)."""
        row = self.row_of.get(memory.id)
        meta = self.meta[row] if row is not None else None
        if row is None or meta is None:
            return False
        self._describe(row, memory, meta.is_turn, meta.text_hash)
        return True

    def _describe(self, row: int, memory: Memory, is_turn: bool, text_hash: str) -> None:
        """The row's metadata and filter columns from `memory`."""
        self.meta[row] = RowMeta(
            id=memory.id, scope=memory.scope, session=memory.session, is_turn=is_turn,
            tags=frozenset(memory.tags), compressed=memory.compressed,
            expires_at=memory.expires_at.timestamp() if memory.expires_at else None,
            superseded=_superseded(memory), text_hash=text_hash)
        self.created[row] = memory.created_at.timestamp()
        self.importance[row] = memory.importance
        self.category[row] = CATEGORIES.index(memory.category)
        self.kind[row] = KINDS.index(memory.kind)
        self.type[row] = TYPES.index(memory.type)
        self.organized[row] = memory.phase == "organized"
        self.expires[row] = memory.expires_at.timestamp() if memory.expires_at else np.inf
        self.superseded[row] = _superseded(memory)
        self.valid_until[row] = (memory.superseded_at.timestamp() if memory.superseded_at
                                 else np.inf)
        self.compressed[row] = memory.compressed

    def set_chunks(self, memory_id: str, vectors: np.ndarray,
                   spans: list[tuple[int, int]]) -> None:
        """A long note's chunk vectors (none: it is scored by its own vector only)."""
        if spans:
            self.chunks[memory_id] = (np.asarray(vectors, dtype=np.float32), spans)
        else:
            self.chunks.pop(memory_id, None)
        self._stacked = None

    def best_chunks(self, query: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For `rows`: the best chunk score (-inf for rows without chunks) and which
        chunk it was (-1: none; `chunk_at` tells its index and span)."""
        best = np.full(len(rows), -np.inf, dtype=np.float32)
        which = np.full(len(rows), -1, dtype=np.int64)
        if not self.chunks or not len(rows):
            return best, which
        matrix, owner_rows, _ = self._stack()
        position = np.full(self.size, -1, dtype=np.int64)
        position[rows] = np.arange(len(rows))
        at = position[owner_rows]
        picked = np.flatnonzero(at >= 0)
        if len(picked):
            scores = matrix[picked] @ query
            np.maximum.at(best, at[picked], scores)
            won = scores >= best[at[picked]]
            which[at[picked][won]] = picked[won]
        return best, which

    def chunk_rows(self, query: np.ndarray, n: int) -> set[int]:
        """Rows of the long notes whose chunks are the `n` closest to `query` (exact:
        chunks are few next to memories)."""
        if not self.chunks:
            return set()
        matrix, owner_rows, _ = self._stack()
        scores = matrix @ query
        top = np.argpartition(-scores, n)[:n] if len(scores) > n else np.arange(len(scores))
        return {int(r) for r in owner_rows[top]}

    def chunk_at(self, k: int) -> tuple[int, tuple[int, int]]:
        """(index within its memory, span) of stacked chunk `k`."""
        _, owner_rows, index = self._stack()
        owner = self.meta[int(owner_rows[k])]
        assert owner is not None
        chunk = int(index[k])
        return chunk, self.chunks[owner.id][1][chunk]

    def _stack(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._stacked is None:
            owners = list(self.chunks)
            sizes = [len(self.chunks[o][0]) for o in owners]
            self._stacked = (
                np.concatenate([self.chunks[o][0] for o in owners]),
                np.repeat(np.array([self.row_of[o] for o in owners], dtype=np.int64), sizes),
                np.concatenate([np.arange(n) for n in sizes]))
        return self._stacked

    def remove(self, memory_id: str) -> None:
        self._field_length = None
        if self.chunks.pop(memory_id, None) is not None:
            self._stacked = None
        row = self.row_of.pop(memory_id, None)
        if row is None:
            return
        self.alive[row] = False
        self.live -= 1
        meta = self.meta[row]
        assert meta is not None
        self.meta[row] = None
        if meta.is_turn and meta.session is not None:
            key = (meta.scope, meta.session)
            turns = self.sessions.get(key, [])
            turns[:] = [t for t in turns if t[1] != memory_id]
            if turns:
                self._relink(*key)
            else:
                self.sessions.pop(key, None)

    def _relink(self, scope: str, session: str) -> None:
        rows = [self.row_of[i] for _, i in self.sessions[(scope, session)]]
        for n, row in enumerate(rows):
            self.prev[row] = rows[n - 1] if n > 0 else -1
            self.next[row] = rows[n + 1] if n + 1 < len(rows) else -1

    def neighbours(self, memory_id: str) -> tuple[str | None, str | None]:
        row = self.row_of.get(memory_id)
        if row is None:
            return None, None
        p, n = int(self.prev[row]), int(self.next[row])
        return (self._id(p), self._id(n))

    def _id(self, row: int) -> str | None:
        if row < 0:
            return None
        meta = self.meta[row]
        return meta.id if meta else None

    def set_vectors(self, memory_id: str, own: np.ndarray | None = None,
                    ctx: np.ndarray | None = None) -> None:
        row = self.row_of.get(memory_id)
        if row is None:
            return
        if own is not None:
            self._store("own", row, own)
            self.place([row])
        if ctx is not None:
            self._store("ctx", row, ctx)

    def _store(self, kind: str, row: int, vector: np.ndarray) -> None:
        peak = float(np.abs(vector).max(initial=0.0))
        scale = peak / 127 if peak > 0 else 0.0
        getattr(self, kind)[row] = np.rint(vector / scale) if scale else 0
        getattr(self, f"{kind}_scale")[row] = scale

    def vectors(self, kind: str, rows: np.ndarray | list[int]) -> np.ndarray:
        """The `own` or `ctx` vectors of `rows`, (len(rows), dim) float32."""
        at = np.asarray(rows, dtype=np.int64)
        scaled: np.ndarray = getattr(self, kind)[at].astype(np.float32) * getattr(
            self, f"{kind}_scale")[at, None]
        return scaled

    def mean(self, kind: str, rows: np.ndarray) -> np.ndarray:
        """The mean of `vectors(kind, rows)`, a block at a time (never a float32 copy of
        a whole scope's vectors)."""
        total = np.zeros(self.dim, dtype=np.float32)
        for start in range(0, len(rows), cells.BLOCK):
            total += self.vectors(kind, rows[start:start + cells.BLOCK]).sum(axis=0)
        return total / max(1, len(rows))

    def similarity(self, kind: str, rows: np.ndarray, query: np.ndarray,
                   shared: SharedWork | None = None) -> np.ndarray:
        """`vectors(kind, rows) @ query` (a vector, or a (dim, m) matrix of them), on the
        int8 codes (int8dot.py), a block of rows at a time: the codes gathered stay
        under a megabyte whatever the number of rows. With `shared`, another thread may
        score some of the blocks."""
        rows = np.asarray(rows, dtype=np.int64)
        codes, scale = getattr(self, kind), getattr(self, f"{kind}_scale")
        out = np.empty((len(rows), *query.shape[1:]), dtype=np.float32)
        split_once = int8dot.Query(query)
        # Blocks of equal size: none falls under int8dot.FEW unless all rows do.
        bounds = np.linspace(0, len(rows), -(-len(rows) // SCORE_BLOCK) + 1).astype(int)

        def score(k: int) -> None:
            part = rows[bounds[k]:bounds[k + 1]]
            out[bounds[k]:bounds[k + 1]] = split_once.scores(np.take(codes, part, axis=0))

        if shared is not None:
            shared.map(score, range(len(bounds) - 1))
        else:
            for k in range(len(bounds) - 1):
                score(k)
        scored: np.ndarray = out * (scale[rows][:, None] if out.ndim == 2 else scale[rows])
        return scored

    def place(self, rows: list[int]) -> None:
        """The rows' cells, from their own vectors (when there are cells)."""
        if self.centroids is not None and rows:
            at = np.asarray(rows, dtype=np.int64)
            self.cell[at] = cells.assign(self.centroids, self._own, at)
            grouped = self._grouped
            if grouped is None or int(at.min()) < grouped[2] or (
                    self.size - grouped[2] > max(GROUP_TAIL, grouped[2] // 8)):
                self.group_cells()

    def group_cells(self) -> None:
        """Group the rows by cell (hold the write lock): after the cells are made, when
        a grouped row changes cell, and when the tail outgrows an eighth of the rows.
        At 130,000 rows the grouping takes 2 ms, the lookup it saves a search 0.8 ms."""
        if self.centroids is None:
            self._grouped = None
            return
        n = self.size
        order = np.argsort(self.cell[:n], kind="stable").astype(np.int32)  # a radix sort
        bounds = np.searchsorted(self.cell[:n][order],
                                 np.arange(-1, len(self.centroids) + 1))
        self._grouped = (order, bounds, n)

    def _probed_rows(self, wanted: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The rows within `mask` whose cell is `wanted` (cells.probed), ascending: the
        wanted cells' runs of the grouped rows, and the rows after them looked up."""
        n = len(mask)
        found, upto = [], 0
        if self._grouped is not None and self._grouped[2] <= n:
            order, bounds, upto = self._grouped
            runs = [order[:bounds[1]]]  # the rows without a cell yet
            runs += [order[bounds[c + 1]:bounds[c + 2]]
                     for c in np.flatnonzero(wanted[:-1]).tolist()]
            grouped = np.concatenate(runs).astype(np.int64)
            found.append(grouped[mask[grouped]])
        found.append(np.flatnonzero(wanted[self.cell[upto:n]] & mask[upto:n]) + upto)
        return np.sort(np.concatenate(found))

    def train_cells(self, force: bool = False) -> int:
        """Make the cells when due (or with `force`, any size): from TRAIN_FROM live rows
        on, and again each time the store has doubled since. How many were made."""
        if not force and (self.live < cells.TRAIN_FROM or (
                self.centroids is not None and self.live < 2 * self.trained)):
            return 0
        rows = np.flatnonzero(self.alive[:self.size])
        if not len(rows):
            return 0
        self.centroids = cells.train(self._own, rows, cells.count(len(rows)))
        self.cell[:self.size] = -1
        self.cell[rows] = cells.assign(self.centroids, self._own, rows)
        self.trained = len(rows)
        self.group_cells()
        return len(self.centroids)

    def _own(self, rows: np.ndarray) -> np.ndarray:
        return self.vectors("own", rows)

    def dense_rows(self, query: np.ndarray, mask: np.ndarray, n: int,
                   shared: SharedWork | None = None) -> np.ndarray:
        """Rows within `mask` whose own or (for turns) context vector is among the `n`
        closest to `query`, searched in the cells nearest it (every row without cells,
        or when the nearest cells hold fewer than `n` of the rows the filters allow).
        With `shared`, another thread may score some of the rows (`similarity`)."""
        rows = None
        if self.centroids is not None:  # the cells' lookup over every row, then the mask
            rows = self._probed_rows(cells.probed(self.centroids, query), mask)
        if rows is None or len(rows) < n:
            rows = np.flatnonzero(mask)
        picked = [_top(rows, self.similarity("own", rows, query, shared), n)]
        turns = rows[self.session_code[rows] >= 0]
        if len(turns):
            picked.append(_top(turns, self.similarity("ctx", turns, query, shared), n))
        return np.union1d(*picked) if len(picked) > 1 else np.sort(picked[0])

    def meta_of(self, memory_id: str) -> RowMeta | None:
        row = self.row_of.get(memory_id)
        return self.meta[row] if row is not None else None

    def is_turn(self, memory_id: str) -> bool:
        meta = self.meta_of(memory_id)
        return bool(meta and meta.is_turn)

    def compact(self, force: bool = False) -> None:
        """Drop dead rows once they are a third of the table, or any with `force`
        (renumbers rows)."""
        dead = self.size - self.live
        if dead == 0 or (dead * 3 < self.size and not force):
            return
        keep = np.flatnonzero(self.alive[: self.size])
        remap = np.full(self.size, -1, dtype=np.int64)
        remap[keep] = np.arange(len(keep))
        for name, (_, empty) in COLUMNS.items():
            if name in ("prev", "next"):
                continue  # relinked below
            column = getattr(self, name)
            column[: len(keep)] = column[keep]
            column[len(keep): self.size] = empty
        self.meta = [self.meta[r] for r in keep]
        self.row_of = {m.id: r for r, m in enumerate(self.meta) if m is not None}
        self.postings.remap(remap)
        self.size = self.live = len(keep)
        self._stacked = None  # it holds row numbers
        self._field_length = None
        self.group_cells()
        self.prev[:] = -1
        self.next[:] = -1
        for scope, session in self.sessions:
            self._relink(scope, session)

    # -- reading (hold `lock.read()`) ------------------------------------------------
    def field_length(self, neighbour_field: float) -> np.ndarray:
        """Each row's index terms plus `neighbour_field` times its previous and next
        turn's (read-only). Kept until the next change: it is the same for every search
        in between (0.5 ms at 130,000 rows). Readers may both make it; either is right."""
        kept = self._field_length
        if kept is not None and kept[0] == neighbour_field:
            return kept[1]
        n = self.size
        prev, nxt = self.prev[:n], self.next[:n]
        length = self.length[:n].copy()
        has_prev, has_next = prev >= 0, nxt >= 0
        length[has_prev] += neighbour_field * self.length[prev[has_prev]]
        length[has_next] += neighbour_field * self.length[nxt[has_next]]
        length.flags.writeable = False
        self._field_length = (neighbour_field, length)
        return length

    def posting(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The term's rows and frequencies (read-only)."""
        return self.postings.get(term)
