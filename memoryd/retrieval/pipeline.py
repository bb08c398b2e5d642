"""SmartSearch: the ranked retrieval pipeline, every stage measured.

The pool is gathered from the corpus under its read hold:
1. candidates: dense (the embedding of the query in the voice of the speakers it
   names, voice.py; exact over the allowed rows when they are few, else over the
   nearest cells of the dense index, top k*4: cells.py) and lexical
   (BM25F top k*4), plus the turns next to them, plus the turns of the best episodes
   of the query's topic nodes and their graph neighbours (graph/topics.py), plus the
   rows that name an entity the query names (best 2k by keywords);
2. fusion: 0.3 x lexical coverage + 0.7 x dense (own 0.7, context 0.3), then
   neighbour credit and session boost; the best k*4 are the pool, with the best the
   query's entities reach in two hops (entity_hops.py).
Then the stages (retrieval/stages/, in the order of their list) rank the pool.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from memoryd.graph.expand import GraphMatch, match
from memoryd.graph.topics import TopicGraph
from memoryd.retrieval import entity_hops, query, scoring
from memoryd.retrieval.candidates import Candidate, Ranking
from memoryd.retrieval.corpus import Corpus
from memoryd.retrieval.hybrid import HybridIndex
from memoryd.retrieval.query import Query, SearchRequest
from memoryd.retrieval.shared_work import Beside, SharedWork
from memoryd.retrieval.stages import stages

if TYPE_CHECKING:
    from memoryd.ports import Reranker

__all__ = ["Candidate", "SearchRequest", "SearchResult", "SmartSearch"]

CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
    os.cpu_count() or 1)
Near = tuple[np.ndarray, GraphMatch | None]  # the query's vector, the topics it matched


@dataclass
class SearchResult:
    selected: list[Candidate]
    candidates: list[Candidate]
    timings_ms: dict[str, float]
    mode: str
    allowed: int
    query: Query  # the question as it was read
    graph: GraphMatch | None = None


class SmartSearch:
    def __init__(self, hybrid: HybridIndex, recipe: scoring.Recipe, exact_limit: int,
                 candidate_factor: int, reranker: Reranker | None,
                 fetch: Any, graph: TopicGraph | None = None, *, readers: int) -> None:
        self.hybrid = hybrid
        self.recipe = recipe
        self.exact_limit = exact_limit
        self.factor = candidate_factor
        # fetch: ids -> memories, for the stages that read texts
        self.stages = stages(reranker, fetch, recipe.lexical_weight)
        self.graph = graph
        # One for each search that can run at once (`readers`; each starts when needed).
        self._ahead = ThreadPoolExecutor(readers, thread_name_prefix="query-embed")
        self._running = 0  # searches in `run` now
        self._wanted = 0  # searches in `wanted`: running, or waiting for their turn
        self._running_lock = threading.Lock()

    @contextmanager
    def wanted(self) -> Iterator[None]:
        """Hold around a search from the moment it asks for a turn until it ends (safe
        from any thread). A search hands work to a second thread only while fewer
        searches are running or waiting than there are cores: with searches queued,
        the cores have work, and handing over only costs. Before, a search split
        whenever a scoring slot happened to be free at its start; at 100,000 on 2
        cores, 8 connections, p99 went from 30-36 to 27-31 ms (bench/scale-log.md)."""
        with self._running_lock:
            self._wanted += 1
        try:
            yield
        finally:
            with self._running_lock:
                self._wanted -= 1

    def run(self, req: SearchRequest, now: float | None = None) -> SearchResult:
        with self._running_lock:
            self._running += 1
            idle_core = max(self._running, self._wanted) < CORES
        try:
            return self._run(req, time.time() if now is None else now, idle_core)
        finally:
            with self._running_lock:
                self._running -= 1

    def _run(self, req: SearchRequest, now: float, idle_core: bool) -> SearchResult:
        clock = _Clock()
        asked = query.read(req, self.hybrid.corpus.speakers(req.where.scopes), now)
        clock.lap("query")
        ranking, mode, allowed = self._gather(asked, now, idle_core, clock)
        for stage in self.stages:
            stage.run(ranking)
            clock.lap(stage.name)
        return SearchResult(ranking.selected, ranking.candidates, clock.laps, mode, allowed,
                            ranking.query, ranking.topics)

    def _gather(self, asked: Query, now: float, idle_core: bool,
                clock: _Clock) -> tuple[Ranking, str, int]:
        """The pool, from the corpus under its read hold; the mode (exact or ann) and
        how many memories the filters allowed.

        With a core idle, a thread of its own embeds the query, matches it against the
        topics and, once this one hands it the filters' mask, finds the rows nearest
        it, while this one filters and scores the keywords: neither needs the other.
        This one then scores a share of the nearest rows' blocks. At 130,000 rows the
        three parts (embed, nearest rows, filter and score) take about the same time,
        so two cores halve it. With every core busy with searches, the handing over
        only costs: then it all runs here, the query embedded before the hold. The
        embedding reads `asked.embedded`, the query in the voice of the speakers it
        names (lang/voice.py); everything else reads the query."""
        req = asked.request
        pool_size = max(req.top_k * self.factor, 20)
        beside: Beside[Near, tuple[np.ndarray, bool], set[int] | None] = Beside(
            self._ahead if idle_core else None, lambda: self._embed(asked, now),
            lambda made, handed, shared: self._nearest(made[0], *handed, pool_size, shared))
        if not idle_core:
            clock.lap("embed")
        corpus = self.hybrid.corpus
        with corpus.lock.read():
            try:
                mask = corpus.mask(req.filters(now))
                allowed = int(mask.sum())
                ann = allowed > self.exact_limit  # the cells, not every allowed row
                beside.hand((mask, ann))
                clock.lap("filter")
                lex = scoring.lexical(corpus, asked.terms, mask, self.recipe)
                asked = asked.naming(corpus.named(asked.words, mask))
                named = asked.named
                named_rows = (_bounded(corpus.naming([k for g in named for k in g], mask),
                                       lex, corpus.created, 2 * pool_size)
                              if named else _NONE)
                # The keywords' share of the candidates, while the other thread embeds.
                lex_top = best_rows(lex, pool_size) if ann else None
                clock.lap("lexical")
                (query_vec, topics), near = beside.result()
                if idle_core:
                    clock.lap("embed")  # what was left of it after the keywords
            finally:  # the other thread reads the corpus under this hold, never after it
                beside.close()
            via_graph = topics.turns if topics else {}
            graph_rows = np.array(sorted(r for i in via_graph if (r := corpus.row_of.get(i))
                                         is not None and mask[r]), dtype=np.int64)
            if near is None:
                mode, rows = "exact", np.flatnonzero(mask)
            else:
                assert lex_top is not None
                mode = "ann"
                rows = np.union1d(ann_candidates(corpus, near, lex_top, mask),
                                  np.union1d(graph_rows, named_rows))
            clock.lap("candidates")
            ranking = self._pool(asked, now, rows, lex, query_vec, (graph_rows, topics),
                                 pool_size, clock, (named_rows, mask))
        clock.lap("pool")
        return ranking, mode, allowed

    def _pool(self, asked: Query, now: float, rows: np.ndarray, lex: np.ndarray,
              query_vec: np.ndarray, graph: tuple[np.ndarray, GraphMatch | None],
              pool_size: int, clock: _Clock, naming: tuple[np.ndarray, np.ndarray]
              ) -> Ranking:
        """Fusion over the candidate rows, and the best `pool_size` of them (with every
        row the topic graph brought, `graph`: its rows and match, and the best the
        query's entities reach: `naming` is the rows that name them and the filters'
        mask) as the candidates the stages rank."""
        corpus, recipe = self.hybrid.corpus, self.recipe
        dense, own, ctx, which = scoring.dense(corpus, query_vec, rows, recipe)
        fused = recipe.lexical_weight * lex[rows] + (1 - recipe.lexical_weight) * dense
        credit, boost = scoring.boosts(corpus, rows, fused, recipe)
        combined = fused + credit + boost
        clock.lap("fusion")
        if len(combined) > pool_size:  # partial sort: only the pool needs an order
            top = np.argpartition(-combined, pool_size)[:pool_size]
            order = top[np.argsort(-combined[top], kind="stable")]
        else:
            order = np.argsort(-combined, kind="stable")
        order = order[:pool_size]
        graph_rows, topics = graph
        if len(graph_rows):  # graph members join the pool whatever their rank
            extra = np.searchsorted(rows, graph_rows)
            order = np.concatenate([order, np.setdiff1d(extra, order)])
        named = asked.named
        named_rows, mask = naming
        found = entity_hops.hops(corpus, named, named_rows, rows, combined, mask, pool_size)
        order = np.concatenate([order, np.setdiff1d(found.positions, order)])
        pool_rows = rows[order]
        meta = [corpus.meta[r] for r in pool_rows.tolist()]
        candidates = [
            Candidate(id=m.id, lexical=float(lex[r]), dense=float(dense[i]),
                      dense_own=float(own[i]), dense_context=float(ctx[i]),
                      fused=float(fused[i]), neighbour_credit=float(credit[i]),
                      session_boost=float(boost[i]), combined=float(combined[i]),
                      chunk=corpus.chunk_at(int(which[i])) if which[i] >= 0 else None,
                      named=[k for g in named for k in g if m.mentions(k)],
                      own=m.tells and any(m.speaker in g for g in named),
                      hop=[k for k in found.followed if m.mentions(k)])
            for i, r, m in zip(order.tolist(), pool_rows.tolist(), meta, strict=True)
            if m is not None]
        return Ranking(asked, now, candidates, corpus.vectors("own", pool_rows),
                       corpus.created[pool_rows].copy(), corpus.importance[pool_rows].copy(),
                       topics, [m for m in meta if m is not None])

    def _embed(self, asked: Query, now: float) -> tuple[np.ndarray, GraphMatch | None]:
        """The vector of the query as the dense side reads it, and the topics it
        matches (takes no corpus lock)."""
        query_vec = self.hybrid.embedder.embed([asked.embedded])[0]
        scopes = asked.request.where.scopes
        found = match(self.graph, query_vec, scopes, now) if self.graph else None
        return query_vec, found

    def _nearest(self, query_vec: np.ndarray, mask: np.ndarray, ann: bool, pool_size: int,
                 shared: SharedWork | None) -> set[int] | None:
        """In ANN mode, the rows nearest the query: by their own or context vectors, and
        by chunks (None in exact mode: every allowed row is a candidate)."""
        if not ann:
            return None
        c = self.hybrid.corpus
        rows = set(c.dense_rows(query_vec, mask, pool_size, shared).tolist())
        rows.update(c.chunk_rows(query_vec, pool_size))
        return rows

    @property
    def in_demand(self) -> int:
        """Searches running or waiting for their turn now (`wanted`)."""
        with self._running_lock:
            return self._wanted


def ann_candidates(corpus: Corpus, near: set[int], lex_top: np.ndarray, mask: np.ndarray
                   ) -> np.ndarray:
    """The nearest rows and the keywords' best, with their turns' neighbours, within
    `mask`, ascending."""
    base = np.union1d(np.fromiter(near, dtype=np.int64, count=len(near)), lex_top)
    around = np.concatenate([base, corpus.prev[base], corpus.next[base]])
    picked = np.unique(around[around >= 0])
    kept: np.ndarray = picked[mask[picked]]
    return kept


_NONE = np.zeros(0, dtype=np.int64)


def _bounded(rows: np.ndarray, lex: np.ndarray, created: np.ndarray, n: int) -> np.ndarray:
    """At most `n` of `rows`: those with the best keyword scores, then the newest
    (ascending)."""
    if len(rows) <= n:
        return rows
    best = np.lexsort((-created[rows], -lex[rows]))[:n]
    return np.sort(rows[best])


def best_rows(lex: np.ndarray, n: int) -> np.ndarray:
    """The `n` rows with the best keyword scores, of those with any (in no order)."""
    reached = np.flatnonzero(lex != 0)
    if len(reached) > n:
        return reached[np.argpartition(-lex[reached], n)[:n]]
    return reached


class _Clock:
    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = round((now - self._last) * 1000, 3)
        self._last = now
