"""The ranked tools: memory_smart_search, memory_recall, memory_explain, and
memory_context (the block a session starts with)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec import UNSET

from memoryd import filters
from memoryd.engine.ranking import Ranked
from memoryd.filters import Filters
from memoryd.retrieval.pipeline import Candidate
from memoryd.schema import Memory
from memoryd.scopes import Caller
from memoryd.tools.params import ContextParams, RecallParams, SmartSearchParams
from memoryd.tools.registry import handler
from memoryd.tools.results import (
    ChunkMatch,
    ContextResult,
    ExplainedCandidate,
    ExplainKnobs,
    ExplainResult,
    GraphTopic,
    RecalledMemory,
    RecallResult,
    ScoredMemory,
    SmartSearchResult,
    memories,
    wire,
)

if TYPE_CHECKING:
    from memoryd.engine import Engine


async def _ranked(engine: Engine, caller: Caller, p: SmartSearchParams,
                  every_candidate: bool = False) -> Ranked:
    where = filters.of(p, caller.visible_scopes(p.scope, p.project))
    return await engine.ranking.search(p.query, where, p.top_k, p.knobs,
                                           every_candidate=every_candidate)


@handler("memory_smart_search")
async def memory_smart_search(engine: Engine, caller: Caller, p: SmartSearchParams
                              ) -> SmartSearchResult:
    ranked = await _ranked(engine, caller, p)
    return SmartSearchResult(
        memories=[wire(ranked.memories[c.id], ScoredMemory, score=round(c.score, 4),
                       scores=c.scores(), graph=c.graph or UNSET)
                  for c in ranked.result.selected if c.id in ranked.memories],
        query=p.query, top_k=ranked.request.top_k)


@handler("memory_explain")
async def memory_explain(engine: Engine, caller: Caller, p: SmartSearchParams
                         ) -> ExplainResult:
    ranked = await _ranked(engine, caller, p, every_candidate=True)
    req, result = ranked.request, ranked.result
    return ExplainResult(
        query=p.query, top_k=req.top_k, mode=result.mode, searched=result.allowed,
        reranker=ranked.reranked,
        params=ExplainKnobs(recency_weight=req.recency_weight,
                            importance_weight=req.importance_weight,
                            score_threshold=req.score_threshold, mmr_lambda=req.mmr_lambda,
                            scopes=req.where.scopes),
        timings_ms=result.timings_ms,
        candidates=[_explained(c, ranked.memories.get(c.id)) for c in result.candidates],
        topics=[GraphTopic(node=m.node, label=m.label, sim=round(m.sim, 4), via=m.via)
                for m in (result.graph.nodes if result.graph else [])],
        entities=[k for group in result.query.named for k in group],
        embedded_query=result.query.embedded)


def _explained(c: Candidate, memory: Memory | None) -> ExplainedCandidate:
    content = memory.content if memory else ""
    return ExplainedCandidate(
        id=c.id, content=content[:200] if memory else None, kept=c.kept, rank=c.rank,
        reason=c.reason, scores=c.scores(), graph=c.graph, chunk=_chunk(content, c.chunk),
        entities=c.named, via_entities=c.hop, own_words=c.own)


def _chunk(content: str, chunk: tuple[int, tuple[int, int]] | None) -> ChunkMatch | None:
    if chunk is None:
        return None
    index, (start, end) = chunk
    return ChunkMatch(index=index, start=start, end=end, text=content[start:end][:200])


@handler("memory_recall")
async def memory_recall(engine: Engine, caller: Caller, p: RecallParams) -> RecallResult:
    # `session` names the conversation whose summary and tail are shown: no filter.
    where = filters.of(p, caller.visible_scopes(p.scope, p.project), session=None)
    made = await engine.recall.recall(
        p.query, where, p.knobs, caller, top_k=p.top_k, session=p.session, tail=p.tail,
        token_budget=p.token_budget, procedural=p.procedural)
    block = made.block
    return RecallResult(
        text=block.text,
        memories=[wire(m, RecalledMemory, score=made.scores.get(m.id)) for m in block.memories],
        recent=memories(block.recent), total_tokens=block.total_tokens,
        budget_used=round(block.total_tokens / made.budget, 4),
        summary_included=block.summary_included)


@handler("memory_context")
async def memory_context(engine: Engine, caller: Caller, p: ContextParams) -> ContextResult:
    where = Filters(scopes=caller.visible_scopes(p.scope, p.project))
    made = await engine.recall.start(where, token_budget=p.token_budget,
                                         recent=p.recent)
    block = made.block
    return ContextResult(text=block.text, memories=memories(block.memories),
                         total_tokens=block.total_tokens,
                         budget_used=round(block.total_tokens / made.budget, 4))
