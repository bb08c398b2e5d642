"""The pool's members reached through entities: the rows that name an entity the
query names (first hop), and the rows that name an entity those rows' best name
beside it (second hop: the sister a question about Ann never names, the town her
trip was to). Each hop is bounded and ordered by the fused score, so a hop brings
the best of what it reaches, not all of it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from memoryd.retrieval.corpus import Corpus

SEEDS = 3  # first-hop rows whose other entities the second hop follows
# An entity named by more than this share of the rows searched is everywhere (a
# transcript's speaker, the product a vault documents): it tells the rows apart no more
# than "the". Counted within the search's filters, so what other scopes hold never
# changes a scope's ranking.
COMMON = 0.1
TOO_FEW = 20  # ... but among few rows, a handful is not "everywhere"


@dataclass
class Hops:
    positions: np.ndarray  # the rows (as positions in the candidate rows) to join
    followed: list[str] = field(default_factory=list)  # the second hop's keys


def hops(corpus: Corpus, named: list[tuple[str, ...]], named_rows: np.ndarray,
         rows: np.ndarray,
         combined: np.ndarray, mask: np.ndarray, pool_size: int) -> Hops:
    """`named_rows` (within `rows`, ascending) name the query's entities `named`;
    `combined` is the fused score of each of `rows`."""
    first = _best(np.searchsorted(rows, named_rows), combined, pool_size // 2)
    seen = {k for group in named for k in group}
    common = max(TOO_FEW, COMMON * int(np.count_nonzero(mask)))
    followed = [key for key in dict.fromkeys(
        key for p in first[:SEEDS].tolist() for key in corpus.entities_of(int(rows[p]))
        if key not in seen)
        if corpus.entities.count(key) <= common or corpus.naming_count(key, mask) <= common]
    if not followed:
        return Hops(first)
    reached = np.intersect1d(corpus.naming(followed, mask), rows, assume_unique=True)
    second = _best(np.searchsorted(rows, reached), combined, pool_size // 4)
    return Hops(np.union1d(first, second), followed)


def _best(positions: np.ndarray, combined: np.ndarray, n: int) -> np.ndarray:
    """The `n` of `positions` with the highest `combined`, best first."""
    order = np.argsort(-combined[positions], kind="stable")[:n]
    best: np.ndarray = positions[order]
    return best
