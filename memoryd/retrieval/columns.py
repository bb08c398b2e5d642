"""The corpus's per-row columns, a row's metadata, and the filter compiled over them.

A filterable field of a memory is a column here (or a RowMeta field), set by the
corpus when it puts a row (Corpus._describe), and read by `mask`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec
import numpy as np

from memoryd.filters import Filters
from memoryd.schema import CATEGORIES, KINDS, TYPES, Memory

if TYPE_CHECKING:
    from memoryd.retrieval.corpus import Corpus

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
VECTORS = ("own", "ctx")  # (capacity, dim) columns

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
    entities: tuple[str, ...] = ()  # the keys of the entities it names (lang/names.py)
    weak: tuple[str, ...] = ()  # ... and of those it may name (a sentence's first word)
    # A turn's speaker (the key of its leading `Name: `), and whether it says something
    # of that speaker (a statement lang/facts.py reads as a fact): what a
    # question about the speaker is answered by first.
    speaker: str = ""
    tells: bool = False

    def mentions(self, key: str) -> bool:
        return key in self.entities or key in self.weak

    def holds(self, memory: Memory, own_hash: str) -> bool:
        """The row holds `memory`'s text as it is now (its index text's hash `own_hash`,
        its scope and session): its vectors need not be made again."""
        return (self.text_hash == own_hash and self.scope == memory.scope
                and self.session == memory.session
                and self.is_turn == (memory.kind == "turn" and memory.session is not None))



# The filterable fields kept as codes: the column of that name holds the index of the
# memory's value in its enumeration (Corpus._describe writes them, `mask` reads them).
CODED: dict[str, tuple[str, ...]] = {"category": CATEGORIES, "kind": KINDS, "type": TYPES}


def mask(corpus: Corpus, filters: Filters) -> np.ndarray:
    """`filters` as a mask over the corpus's rows (the caller holds its read lock):
    the compilation the catalog's SQL (store/catalog_sql.py `where`) must agree with."""
    if filters.source is not None:
        raise ValueError("the corpus keeps no memory's source: filter by it in SQL")
    n = corpus.size
    if filters.as_of is None:
        mask = corpus.alive[:n] & ~corpus.superseded[:n]
    else:
        mask = (corpus.alive[:n] & (corpus.created[:n] <= filters.as_of)
                & (corpus.valid_until[:n] > filters.as_of))
    mask &= corpus.expires[:n] > filters.at()
    if not filters.include_compressed:
        mask &= ~corpus.compressed[:n]
    if filters.scopes is not None:
        codes = [corpus.scope_codes[s] for s in filters.scopes if s in corpus.scope_codes]
        mask &= np.isin(corpus.scope[:n], codes)
    for column, names in CODED.items():
        value = getattr(filters, column)
        if value is not None:
            mask &= getattr(corpus, column)[:n] == names.index(value)
    if filters.not_kind is not None:
        mask &= corpus.kind[:n] != KINDS.index(filters.not_kind)
    if filters.phase is not None:
        mask &= corpus.organized[:n] == (filters.phase == "organized")
    if filters.since is not None:
        mask &= corpus.created[:n] >= filters.since.timestamp()
    if filters.until is not None:
        mask &= corpus.created[:n] < filters.until.timestamp()
    if filters.tags or filters.session is not None:  # rarer: a pass over the survivors
        wanted = set(filters.tags)
        for row in np.flatnonzero(mask).tolist():
            meta = corpus.meta[row]
            if meta is None or (wanted and not wanted <= meta.tags) or (
                    filters.session is not None and meta.session != filters.session):
                mask[row] = False
    narrowed: np.ndarray = mask
    return narrowed
