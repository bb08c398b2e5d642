"""The ranked tools: memory_smart_search, memory_recall, memory_explain."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from memoryd.errors import InvalidParams
from memoryd.retrieval.pipeline import SearchRequest
from memoryd.schema import to_wire
from memoryd.scopes import Caller
from memoryd.tools.params import RecallParams, SmartSearchParams
from memoryd.tools.registry import handler

if TYPE_CHECKING:
    from memoryd.server.app import App

Result = dict[str, Any]


def as_of(value: str) -> datetime:
    """`as_of` as a time: a bare date means the end of that day (UTC unless given)."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidParams("as_of", f"{value!r} is not a date or an ISO 8601 time") from None
    if len(value) == 10:  # YYYY-MM-DD: all of that day
        parsed += timedelta(days=1) - timedelta(microseconds=1)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _request(app: App, caller: Caller, p: SmartSearchParams | RecallParams,
             top_k: int) -> SearchRequest:
    r = app.config.retrieval
    threshold = (app.config.reranker.score_threshold if app.engine.reranker is not None
                 else r.score_threshold)
    req = SearchRequest(query=p.query, top_k=top_k, scopes=caller.visible_scopes(p.scope),
                        recency_weight=r.recency_weight, importance_weight=r.importance_weight,
                        score_threshold=threshold, mmr_lambda=r.mmr_lambda, kind=p.kind,
                        include_compressed=p.include_compressed,
                        as_of=as_of(p.as_of).timestamp() if p.as_of else None)
    for name in ("recency_weight", "importance_weight", "score_threshold", "mmr_lambda"):
        value = getattr(p, name, None)  # recall takes the first and third
        if value is not None:
            setattr(req, name, value)
    if isinstance(p, SmartSearchParams):
        for name in ("category", "phase", "type", "session"):
            value = getattr(p, name)
            if value is not None:
                setattr(req, name, value)
        req.tags = p.tags
    if req.recency_weight + req.importance_weight > 1:
        field = "importance_weight" if isinstance(p, SmartSearchParams) else "recency_weight"
        raise InvalidParams(field, "recency_weight + importance_weight must be at most 1")
    return req


@handler("memory_smart_search")
async def memory_smart_search(app: App, caller: Caller, p: SmartSearchParams) -> Result:
    req = _request(app, caller, p, p.top_k or app.config.retrieval.top_k)
    result, memories = await app.engine.reads.smart_search(req)
    out = []
    for c in result.selected:
        memory = memories.get(c.id)
        if memory is not None:
            out.append(to_wire(memory) | {"score": round(c.score, 4), "scores": c.scores()}
                       | ({"graph": c.graph} if c.graph else {}))
    return {"memories": out, "query": p.query, "top_k": req.top_k}


@handler("memory_explain")
async def memory_explain(app: App, caller: Caller, p: SmartSearchParams) -> Result:
    req = _request(app, caller, p, p.top_k or app.config.retrieval.top_k)
    result, memories = await app.engine.reads.smart_search(req, every_candidate=True)
    candidates = []
    for c in result.candidates:
        memory = memories.get(c.id)
        candidates.append({"id": c.id, "content": memory.content[:200] if memory else None,
                           "kept": c.kept, "rank": c.rank, "reason": c.reason,
                           "scores": c.scores(), "graph": c.graph,
                           "chunk": _chunk(memory.content if memory else "", c.chunk)})
    return {"query": p.query, "top_k": req.top_k, "mode": result.mode,
            "searched": result.allowed, "reranker": app.engine.reranker is not None,
            "params": {"recency_weight": req.recency_weight,
                       "importance_weight": req.importance_weight,
                       "score_threshold": req.score_threshold, "mmr_lambda": req.mmr_lambda,
                       "scopes": req.scopes},
            "timings_ms": result.timings_ms, "candidates": candidates,
            "topics": [{"node": m.node, "label": m.label, "sim": round(m.sim, 4), "via": m.via}
                       for m in (result.graph.nodes if result.graph else [])]}


def _chunk(content: str, chunk: tuple[int, tuple[int, int]] | None) -> dict[str, Any] | None:
    """A long note's chunk that matched: its index, where it lies, its start."""
    if chunk is None:
        return None
    index, (start, end) = chunk
    return {"index": index, "start": start, "end": end, "text": content[start:end][:200]}


@handler("memory_recall")
async def memory_recall(app: App, caller: Caller, p: RecallParams) -> Result:
    top_k = p.top_k or app.config.recall.top_k
    budget = p.token_budget or app.config.recall.token_budget
    made = await app.engine.recall.recall(
        _request(app, caller, p, top_k * 2), caller, top_k=top_k, session=p.session,
        tail=app.config.recall.tail if p.tail is None else p.tail, token_budget=budget)
    block = made.block
    return {"text": block.text,
            "memories": [{**to_wire(m), "score": made.scores.get(m.id)}
                         for m in block.memories],
            "recent": [to_wire(m) for m in block.recent],
            "total_tokens": block.total_tokens,
            "budget_used": round(block.total_tokens / budget, 4),
            "summary_included": block.summary_included}
