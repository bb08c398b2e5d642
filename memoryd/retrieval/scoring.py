"""The ranking recipe as pure functions over the corpus (research/fusion.md §3).

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
    """Coverage-normalised BM25F over rows [0, corpus.size); 0 outside `mask`."""
    n = corpus.size
    out = np.zeros(n, dtype=np.float32)
    total = int(mask.sum())
    if total == 0 or not query_terms:
        return out
    prev, nxt = corpus.prev[:n], corpus.next[:n]
    w = recipe.neighbour_field
    length = corpus.length[:n].copy()
    has_prev, has_next = prev >= 0, nxt >= 0
    length[has_prev] += w * corpus.length[prev[has_prev]]
    length[has_next] += w * corpus.length[nxt[has_next]]
    avg = float(length[mask].mean()) or 1.0
    norm = recipe.k1 * (1 - recipe.b + recipe.b * length / avg)
    idf_mass = 0.0
    for term in dict.fromkeys(query_terms):
        posting = corpus.posting(term)
        tf = np.zeros(n, dtype=np.float32)
        if posting is not None:
            rows, freqs = posting
            live = corpus.alive[rows]  # dead rows wait for compaction; their links are stale
            rows, freqs = rows[live], freqs[live]
            np.add.at(tf, rows, freqs)
            spill_next = nxt[rows]  # the turn after a match has it as its previous turn
            ok = spill_next >= 0
            np.add.at(tf, spill_next[ok], w * freqs[ok])
            spill_prev = prev[rows]
            ok = spill_prev >= 0
            np.add.at(tf, spill_prev[ok], w * freqs[ok])
        df = int(np.count_nonzero(tf[mask]))
        idf = math.log(1 + (total - df + 0.5) / (df + 0.5))
        idf_mass += idf
        if df:
            out += idf * tf * (recipe.k1 + 1) / (tf + norm)
    out[~mask] = 0
    return np.power(out / idf_mass, recipe.coverage_power, dtype=np.float32)


def dense(corpus: Corpus, query: np.ndarray, rows: np.ndarray, recipe: Recipe
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    own = corpus.own[rows] @ query
    ctx = corpus.ctx[rows] @ query
    return (1 - recipe.context_weight) * own + recipe.context_weight * ctx, own, ctx


def boosts(corpus: Corpus, rows: np.ndarray, fused: np.ndarray, recipe: Recipe
           ) -> tuple[np.ndarray, np.ndarray]:
    """(neighbour credit, session boost) for `rows`, from the fused scores of `rows`.

    A turn earns 0.15 x its better neighbour's score and 0.3 x the best score in
    its session; a memory outside a conversation is its own session.
    """
    score_of = dict(zip(rows.tolist(), fused.tolist(), strict=True))
    credit = np.zeros(len(rows), dtype=np.float32)
    for i, row in enumerate(rows.tolist()):
        best = max(score_of.get(int(corpus.prev[row]), 0.0),
                   score_of.get(int(corpus.next[row]), 0.0), 0.0)
        credit[i] = recipe.neighbour_credit * best
    s1 = fused + credit
    best_in_session: dict[tuple[str, str], float] = {}
    keys: list[tuple[str, str] | None] = []
    for i, row in enumerate(rows.tolist()):
        meta = corpus.meta[row]
        key = (meta.scope, meta.session) if meta and meta.is_turn and meta.session else None
        keys.append(key)
        if key is not None:
            best_in_session[key] = max(best_in_session.get(key, float("-inf")), float(s1[i]))
    boost = np.array([recipe.session_boost * (best_in_session[k] if k else float(s1[i]))
                      for i, k in enumerate(keys)], dtype=np.float32)
    return credit, boost


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
