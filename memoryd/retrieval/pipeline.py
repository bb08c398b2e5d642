"""SmartSearch: the ranked retrieval pipeline, every stage measured.

1. candidates: dense (query embedding; exact over the allowed rows when they are
   few, else over the nearest cells of the dense index, top k*4: cells.py) and lexical
   (BM25F top k*4), plus the turns next to them, plus the turns of the best episodes
   of the query's topic nodes and their graph neighbours (graph/topics.py);
2. fusion: 0.3 x lexical coverage + 0.7 x dense (own 0.7, context 0.3), then
   neighbour credit and session boost;
3. relevance: a cross-encoder's sigmoid when one is configured, else the fused
   score scaled to 0-1; candidates below `score_threshold` are dropped;
4. blend: (1 - wr - wi) x relevance + wr x exp(-age/30 d) + wi x importance;
5. diversity: MMR on the own embeddings until top_k.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from memoryd.filters import Filters
from memoryd.graph.expand import GraphMatch, match
from memoryd.graph.topics import TopicGraph
from memoryd.retrieval import scoring, text
from memoryd.retrieval.hybrid import HybridIndex
from memoryd.retrieval.shared_work import SharedWork

if TYPE_CHECKING:
    from memoryd.ports import Reranker


# s2 of a memory outside a conversation is 1.3 x its fused score; dividing by it puts
# such a memory's relevance on the fused (cosine-like) scale.
RELEVANCE_SCALE = 1.3
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
    os.cpu_count() or 1)


@dataclass
class SearchRequest:
    query: str
    top_k: int = 5
    where: Filters = field(default_factory=Filters)  # which memories may be ranked
    recency_weight: float = 0.2
    importance_weight: float = 0.1
    score_threshold: float = 0.0
    mmr_lambda: float = 0.7

    def filters(self, now: float) -> Filters:
        """Which memories the search ranks, judged at `now`. Session summaries are
        handed to recall whole, not ranked among memories, unless asked for by kind."""
        return msgspec.structs.replace(
            self.where, not_kind="summary" if self.where.kind is None else None, now=now)


@dataclass
class Candidate:
    id: str
    lexical: float
    dense: float
    dense_own: float
    dense_context: float
    fused: float
    neighbour_credit: float
    session_boost: float
    combined: float
    relevance: float = 0.0
    rerank: float | None = None
    recency: float = 0.0
    importance: float = 0.0
    score: float = 0.0
    rank: int | None = None
    kept: bool = False
    reason: str = ""
    graph: dict[str, Any] | None = None  # reached through this topic node (and edge)
    chunk: tuple[int, tuple[int, int]] | None = None  # a long note's best chunk (index, span)

    def scores(self) -> dict[str, Any]:
        out = {"lexical": self.lexical, "dense": self.dense, "dense_own": self.dense_own,
               "dense_context": self.dense_context, "fused": self.fused,
               "neighbour_credit": self.neighbour_credit, "session_boost": self.session_boost,
               "relevance": self.relevance, "recency": self.recency,
               "importance": self.importance, "score": self.score}
        if self.rerank is not None:
            out["rerank"] = self.rerank
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in out.items()}


@dataclass
class SearchResult:
    selected: list[Candidate]
    candidates: list[Candidate]
    timings_ms: dict[str, float]
    mode: str
    allowed: int
    graph: GraphMatch | None = None


class SmartSearch:
    def __init__(self, hybrid: HybridIndex, recipe: scoring.Recipe, exact_limit: int,
                 candidate_factor: int, reranker: Reranker | None,
                 fetch: Any, graph: TopicGraph | None = None, *, readers: int) -> None:
        self.hybrid = hybrid
        self.recipe = recipe
        self.exact_limit = exact_limit
        self.factor = candidate_factor
        self.reranker = reranker
        self.fetch = fetch  # ids -> Memory list (for rerank text)
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
        # With a core idle, a thread of its own embeds the query, matches it against the
        # topics and, once this one hands it the filters' mask, finds the rows nearest
        # it, while this one filters and scores the keywords: neither needs the other.
        # This one then scores a share of the nearest rows' blocks. At 130,000 rows the
        # three parts (embed, nearest rows, filter and score) take about the same time,
        # so two cores halve it. With every core busy with searches, the handing over
        # only costs.
        handed: Future[tuple[np.ndarray, bool]] = Future()  # the mask; whether ANN
        pool_size = max(req.top_k * self.factor, 20)
        shared = SharedWork()  # the nearest rows' blocks, for this thread to take a share
        if idle_core:
            ahead = self._ahead.submit(self._ahead_of_keywords, req, now, handed, pool_size,
                                       shared)
        else:
            ahead = Future()
            ahead.set_result((*self._embed(req, now), None))
            clock.lap("embed")
        corpus = self.hybrid.corpus
        with corpus.lock.read():
            try:
                query_terms = text.terms(req.query)
                mask = self._mask(req, now)
                allowed = int(mask.sum())
                ann = allowed > self.exact_limit  # the cells, not every allowed row
                handed.set_result((mask, ann))
                clock.lap("filter")
                lex = scoring.lexical(corpus, query_terms, mask, self.recipe)
                # The keywords' share of the candidates, while the other thread embeds.
                lex_top = _best(lex, pool_size) if ann else None
                clock.lap("lexical")
                if idle_core:  # score some of the nearest rows' blocks rather than wait
                    shared.help_until(ahead)
                query_vec, topics, near = ahead.result()
                if idle_core:
                    clock.lap("embed")  # what was left of it after the keywords
            finally:  # the other thread reads the corpus under this hold, never after it
                handed.cancel()  # (when the mask never came)
                wait([ahead])
            via_graph = topics.turns if topics else {}
            graph_rows = np.array(sorted(r for i in via_graph if (r := corpus.row_of.get(i))
                                         is not None and mask[r]), dtype=np.int64)
            if not ann:
                mode = "exact"
                rows = np.flatnonzero(mask)
            else:
                mode = "ann"
                if near is None:
                    near = self._near(query_vec, mask, pool_size)
                assert lex_top is not None
                rows = np.union1d(self._ann_candidates(near, lex_top, mask), graph_rows)
            clock.lap("candidates")
            dense, own, ctx, which = scoring.dense(corpus, query_vec, rows, self.recipe)
            fused = self.recipe.lexical_weight * lex[rows] + (
                1 - self.recipe.lexical_weight) * dense
            credit, boost = scoring.boosts(corpus, rows, fused, self.recipe)
            combined = fused + credit + boost
            clock.lap("fusion")
            if len(combined) > pool_size:  # partial sort: only the pool needs an order
                top = np.argpartition(-combined, pool_size)[:pool_size]
                order = top[np.argsort(-combined[top], kind="stable")]
            else:
                order = np.argsort(-combined, kind="stable")
            order = order[:pool_size]
            if len(graph_rows):  # graph members join the pool whatever their rank
                extra = np.searchsorted(rows, graph_rows)
                order = np.concatenate([order, np.setdiff1d(extra, order)])
            pool_rows = rows[order]
            meta = [corpus.meta[r] for r in pool_rows.tolist()]
            vectors = corpus.vectors("own", pool_rows)
            created = corpus.created[pool_rows].copy()
            importance = corpus.importance[pool_rows].copy()
            candidates = [
                Candidate(id=m.id, lexical=float(lex[r]), dense=float(dense[i]),
                          dense_own=float(own[i]), dense_context=float(ctx[i]),
                          fused=float(fused[i]), neighbour_credit=float(credit[i]),
                          session_boost=float(boost[i]), combined=float(combined[i]),
                          chunk=corpus.chunk_at(int(which[i])) if which[i] >= 0 else None)
                for i, r, m in zip(order.tolist(), pool_rows.tolist(), meta,
                                   strict=True) if m is not None]
        if topics is not None:
            nodes = {m.node: m for m in topics.nodes}
            for c in candidates:
                if c.id in via_graph:
                    node, sim = via_graph[c.id]
                    hit = nodes[node]
                    c.graph = {"node": node, "label": hit.label, "node_sim": round(hit.sim, 4),
                               "episode_sim": round(sim, 4), "via": hit.via}
        clock.lap("pool")
        self._relevance(req, candidates)
        clock.lap("rerank" if self.reranker else "relevance")
        wr, wi = req.recency_weight, req.importance_weight
        survivors: list[int] = []
        for i, c in enumerate(candidates):
            age_days = max(0.0, (now - float(created[i])) / 86400)
            c.recency = math.exp(-age_days / 30)
            c.importance = float(importance[i])
            c.score = (1 - wr - wi) * c.relevance + wr * c.recency + wi * c.importance
            if c.relevance < req.score_threshold:
                c.reason = f"relevance {c.relevance:.3f} below score_threshold"
            else:
                survivors.append(i)
        picks = scoring.mmr(np.array([candidates[i].score for i in survivors], np.float32),
                            vectors[survivors], req.top_k, req.mmr_lambda)
        selected = []
        for rank, p in enumerate(picks):
            c = candidates[survivors[p]]
            c.kept, c.rank, c.reason = True, rank + 1, "selected"
            selected.append(c)
        for i in survivors:
            if not candidates[i].kept:
                candidates[i].reason = "not picked by MMR within top_k"
        clock.lap("blend_mmr")
        return SearchResult(selected, candidates, clock.laps, mode, allowed, topics)

    def _embed(self, req: SearchRequest, now: float) -> tuple[np.ndarray, GraphMatch | None]:
        """The query's vector and the topics it matches (takes no corpus lock)."""
        query_vec = self.hybrid.embedder.embed([req.query])[0]
        found = match(self.graph, query_vec, req.where.scopes, now) if self.graph else None
        return query_vec, found

    def _mask(self, req: SearchRequest, now: float) -> np.ndarray:
        return self.hybrid.corpus.mask(req.filters(now))

    def _ahead_of_keywords(self, req: SearchRequest, now: float,
                           handed: Future[tuple[np.ndarray, bool]], pool_size: int,
                           shared: SharedWork
                           ) -> tuple[np.ndarray, GraphMatch | None, set[int] | None]:
        """The query's vector, its topics and (in ANN mode) its nearest rows, on the
        query-embed thread. The rows are read under the searching thread's read hold:
        it hands over the mask inside it and waits for this before leaving it (taking
        a share of the rows' blocks meanwhile)."""
        query_vec, topics = self._embed(req, now)
        mask, ann = handed.result()
        return query_vec, topics, (self._near(query_vec, mask, pool_size, shared) if ann
                                   else None)

    def _near(self, query_vec: np.ndarray, mask: np.ndarray, pool_size: int,
              shared: SharedWork | None = None) -> set[int]:
        """The rows nearest the query: by their own or context vectors, and by chunks."""
        c = self.hybrid.corpus
        rows = set(c.dense_rows(query_vec, mask, pool_size, shared).tolist())
        rows.update(c.chunk_rows(query_vec, pool_size))
        return rows

    def _ann_candidates(self, near: set[int], lex_top: np.ndarray, mask: np.ndarray
                        ) -> np.ndarray:
        """The nearest rows and the keywords' best, with their turns' neighbours, within
        `mask`, ascending."""
        c = self.hybrid.corpus
        base = np.union1d(np.fromiter(near, dtype=np.int64, count=len(near)), lex_top)
        around = np.concatenate([base, c.prev[base], c.next[base]])
        picked = np.unique(around[around >= 0])
        kept: np.ndarray = picked[mask[picked]]
        return kept

    def _relevance(self, req: SearchRequest, candidates: list[Candidate]) -> None:
        if self.reranker is None or not candidates:
            for c in candidates:
                c.relevance = min(1.0, max(0.0, c.combined / RELEVANCE_SCALE))
            return
        docs = {m.id: m for m in self.fetch([c.id for c in candidates])}
        pairs = [(req.query, _passage(docs[c.id].content, c.chunk) if c.id in docs else "")
                 for c in candidates]
        for c, score in zip(candidates, self.reranker.score(pairs), strict=True):
            c.rerank = c.relevance = float(score)


def _best(lex: np.ndarray, n: int) -> np.ndarray:
    """The `n` rows with the best keyword scores, of those with any (in no order)."""
    reached = np.flatnonzero(lex != 0)
    if len(reached) > n:
        return reached[np.argpartition(-lex[reached], n)[:n]]
    return reached


def _passage(content: str, chunk: tuple[int, tuple[int, int]] | None) -> str:
    """What the cross-encoder reads: a long note's matching chunk, else the content."""
    return content[chunk[1][0]:chunk[1][1]] if chunk else content


class _Clock:
    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = round((now - self._last) * 1000, 3)
        self._last = now
