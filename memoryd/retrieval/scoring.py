"""The ranking recipe as pure functions over the corpus.

lexical: BM25F with the previous/next turn as a down-weighted field, divided by
the query's own idf mass (coverage) and raised to 1.5, which keeps one rare word
from outranking a clear dense match in a small store of facts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from memoryd.retrieval.corpus import Corpus


@dataclass(frozen=True)
class Recipe:
    k1: float = 0.6
    b: float = 0.1
    neighbour_field: float = 0.7
    coverage_power: float = 1.5
    lexical_weight: float = 0.3
    context_weight: float = 0.3
    neighbour_credit: float = 0.15
    session_boost: float = 0.3


def lexical(corpus: Corpus, query_terms: list[str], mask: np.ndarray, recipe: Recipe
            ) -> np.ndarray:
    """Coverage-normalised BM25F over rows [0, corpus.size); 0 outside `mask`.

    Worked out on the rows each term reaches only (a rare term: a few rows, not the
    whole store), with the same float32 operations in the same order for each row as
    over whole arrays, so the scores are those bit for bit."""
    n = corpus.size
    out = np.zeros(n, dtype=np.float32)
    total = int(mask.sum())
    if total == 0 or not query_terms:
        return out
    prev, nxt = corpus.prev[:n], corpus.next[:n]
    w = recipe.neighbour_field
    length = corpus.field_length(w)
    # Summed in float64, where float32 lengths add up exactly (to a total of 2**28 and
    # more): a float32 sum's rounding depends on the rows' order, which a restart
    # changes (it loads them in another order than they were written in).
    avg = float(length[mask].mean(dtype=np.float64)) or 1.0
    idf_mass = 0.0
    linked = bool(corpus.sessions)  # without sessions no row has a neighbour
    for term in dict.fromkeys(query_terms):
        posting = corpus.posting(term)
        reached: np.ndarray = np.zeros(0, dtype=np.int32)
        tf: np.ndarray = np.zeros(0, dtype=np.float32)
        if posting is not None:
            rows, freqs = posting
            live = corpus.alive[rows]  # dead rows wait for compaction; their links are stale
            rows, freqs = rows[live], freqs[live]
            spill_next, spill_prev = (nxt[rows], prev[rows]) if linked else (rows[:0],) * 2
            if (spill_next >= 0).any() or (spill_prev >= 0).any():
                # Turns: the turn after a match has it as its previous turn, and the
                # one before as its next; a row's frequency sums in this order.
                full = np.zeros(n, dtype=np.float32)
                np.add.at(full, rows, freqs)
                ok = spill_next >= 0
                np.add.at(full, spill_next[ok], w * freqs[ok])
                ok = spill_prev >= 0
                np.add.at(full, spill_prev[ok], w * freqs[ok])
                reached = np.flatnonzero(full != 0)
                tf = full[reached]
            else:  # a term's rows ascend, each once: 0 + frequency is the frequency
                reached, tf = rows, freqs
            inside = mask[reached]
            reached, tf = reached[inside], tf[inside]
        df = len(reached)
        idf = math.log(1 + (total - df + 0.5) / (df + 0.5))
        idf_mass += idf
        if df:  # idf * tf * (k1 + 1) / (tf + norm)
            norm = recipe.k1 * (1 - recipe.b + recipe.b * length[reached] / avg)
            share = np.multiply(idf, tf)
            share *= recipe.k1 + 1
            share /= tf + norm
            out[reached] += share
    # Only the rows a term reached: a fractional power costs about 20 ns a row, and the
    # rest stay 0 (3 ms of a query at 130,000 rows, against 0.7 ms); with a power of 0
    # or less, 0 is raised too.
    raised: np.ndarray | slice = (np.flatnonzero(out != 0) if recipe.coverage_power > 0
                                  else slice(None))
    out[raised] = np.power(out[raised] / idf_mass, recipe.coverage_power, dtype=np.float32)
    return out


def dense(corpus: Corpus, query: np.ndarray, rows: np.ndarray, recipe: Recipe
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(dense, own, context, best chunk) for `rows`. A long note scores by its own
    vector or its best chunk, whichever is closer (-1: no chunk won)."""
    own = corpus.similarity("own", rows, query)
    ctx = corpus.similarity("ctx", rows, query)
    chunk, which = corpus.best_chunks(query, rows)
    won = chunk > own
    own = np.where(won, chunk, own)
    ctx = np.where(won, np.maximum(ctx, chunk), ctx)
    which = np.where(won, which, -1)
    return (1 - recipe.context_weight) * own + recipe.context_weight * ctx, own, ctx, which


def boosts(corpus: Corpus, rows: np.ndarray, fused: np.ndarray, recipe: Recipe
           ) -> tuple[np.ndarray, np.ndarray]:
    """(neighbour credit, session boost) for `rows`, from the fused scores of `rows`.

    A turn earns 0.15 x its better neighbour's score and 0.3 x the best score in
    its session; a memory outside a conversation is its own session.
    """
    full = np.zeros(corpus.size + 1, dtype=np.float32)  # index -1 (no neighbour) reads 0
    full[rows] = fused
    prev, nxt = corpus.prev[rows], corpus.next[rows]
    best_neighbour = np.maximum(np.maximum(full[prev], full[nxt]), 0.0)
    credit = (recipe.neighbour_credit * best_neighbour).astype(np.float32)
    s1 = fused + credit
    codes = corpus.session_code[rows]
    in_session = codes >= 0
    best = np.full(len(corpus.session_codes) + 1, -np.inf, dtype=np.float32)
    np.maximum.at(best, codes[in_session], s1[in_session])
    session_best = np.where(in_session, best[np.where(in_session, codes, -1)], s1)
    return credit, (recipe.session_boost * session_best).astype(np.float32)


def mmr(relevance: np.ndarray, vectors: np.ndarray, k: int, lam: float) -> list[int]:
    """Maximal marginal relevance: indexes into `relevance`, in pick order."""
    if len(relevance) == 0:
        return []
    # Scaled by the best score, not min-max: over a small pool min-max would pin the
    # least relevant candidate at 0, where no novelty could ever lift it.
    top = float(relevance.max())
    rel = np.clip(relevance / top, 0.0, 1.0) if top > 0 else np.ones_like(relevance)
    sims = vectors @ vectors.T
    picked: list[int] = []
    max_sim = np.full(len(rel), -np.inf, dtype=np.float32)
    available = np.ones(len(rel), dtype=bool)
    for _ in range(min(k, len(rel))):
        penalty = np.where(np.isfinite(max_sim), max_sim, 0.0)
        value = lam * rel - (1 - lam) * penalty
        value[~available] = -np.inf
        best = int(np.argmax(value))
        picked.append(best)
        available[best] = False
        max_sim = np.maximum(max_sim, sims[best])
    return picked
