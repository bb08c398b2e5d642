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

from memoryd.retrieval import cells, int8dot
from memoryd.retrieval.postings import Postings
from memoryd.rwlock import RWLock
from memoryd.schema import CATEGORIES, KINDS, TYPES, Memory

# The per-row columns: numpy arrays of `capacity` rows, each with its dtype and the
# value of an empty row. `own` and `ctx` hold one vector a row as int8 codes times the
# row's `*_scale`: a quarter of the memory of float32, a cosine off by under 2e-3, and
# fast to score (`similarity`; LoCoMo R@10 is unchanged, README). Read them through
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
SCORE_BLOCK = 8192  # rows scored at once by `similarity`: 3 MB of int8 codes


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

    def _alloc(self, capacity: int) -> None:
        for name, (dtype, empty) in COLUMNS.items():
            shape = (capacity, self.dim) if name in _VECTORS else (capacity,)
            new = (np.zeros(shape, dtype=dtype) if not empty  # calloc: no page touched
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
        return self.alive[:n] & (self.scope[:n] == code) & ~self.superseded[:n]

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
        many rows at once (one matrix product instead of one a row: 0.12 -> 0.03-0.07 ms
        a put, 1,280 puts into 20,000 rows in 141 cells)."""
        self.remove(memory.id)
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
        rows = np.asarray(rows, dtype=np.int64)
        return getattr(self, kind)[rows].astype(np.float32) * getattr(
            self, f"{kind}_scale")[rows, None]

    def mean(self, kind: str, rows: np.ndarray) -> np.ndarray:
        """The mean of `vectors(kind, rows)`, a block at a time (never a float32 copy of
        a whole scope's vectors)."""
        total = np.zeros(self.dim, dtype=np.float32)
        for start in range(0, len(rows), cells.BLOCK):
            total += self.vectors(kind, rows[start:start + cells.BLOCK]).sum(axis=0)
        return total / max(1, len(rows))

    def similarity(self, kind: str, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
        """`vectors(kind, rows) @ query` (a vector, or a (dim, m) matrix of them), on the
        int8 codes (int8dot.py), a block of rows at a time: the codes gathered stay a
        few MB whatever the number of rows."""
        rows = np.asarray(rows, dtype=np.int64)
        codes, scale = getattr(self, kind), getattr(self, f"{kind}_scale")
        out = np.empty((len(rows), *query.shape[1:]), dtype=np.float32)
        split_once = int8dot.Query(query)
        for start in range(0, len(rows), SCORE_BLOCK):
            part = rows[start:start + SCORE_BLOCK]
            out[start:start + len(part)] = split_once.scores(codes[part])
        return out * (scale[rows][:, None] if out.ndim == 2 else scale[rows])

    def place(self, rows: list[int]) -> None:
        """The rows' cells, from their own vectors (when there are cells)."""
        if self.centroids is not None and rows:
            at = np.asarray(rows, dtype=np.int64)
            self.cell[at] = cells.assign(self.centroids, self._own, at)

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
        return len(self.centroids)

    def _own(self, rows: np.ndarray) -> np.ndarray:
        return self.vectors("own", rows)

    def dense_rows(self, query: np.ndarray, mask: np.ndarray, n: int) -> np.ndarray:
        """Rows within `mask` whose own or (for turns) context vector is among the `n`
        closest to `query`, searched in the cells nearest it (every row without cells,
        or when the nearest cells hold fewer than `n` of the rows the filters allow)."""
        rows = None
        if self.centroids is not None:  # the cells' lookup over every row, then the mask
            rows = np.flatnonzero(cells.probed(self.centroids, query)[self.cell[:len(mask)]]
                                  & mask)
        if rows is None or len(rows) < n:
            rows = np.flatnonzero(mask)
        picked = [_top(rows, self.similarity("own", rows, query), n)]
        turns = rows[self.session_code[rows] >= 0]
        if len(turns):
            picked.append(_top(turns, self.similarity("ctx", turns, query), n))
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
        self.prev[:] = -1
        self.next[:] = -1
        for scope, session in self.sessions:
            self._relink(scope, session)

    # -- reading (hold `lock.read()`) ------------------------------------------------
    def posting(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The term's rows and frequencies (read-only)."""
        return self.postings.get(term)
