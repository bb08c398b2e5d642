"""Recall: the `<memory>` block for a prompt, and what it was made of.

The ranked memories of a smart search, the scope's procedural memories first (they say
how to behave, whatever the query: unless another kind, or a past time, was asked
for), the session's summary and its latest turns, fitted to a token budget."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import trio

from memoryd.engine.conversation import Conversation
from memoryd.engine.reads import Reads
from memoryd.filters import Filters
from memoryd.retrieval import recall
from memoryd.retrieval.pipeline import SearchRequest
from memoryd.schema import Memory
from memoryd.scopes import Caller

PROCEDURAL_LIMIT = 20


@dataclass
class Block:
    block: recall.Recalled
    scores: dict[str, float]  # the ranked memories' scores, by id


class Recall:
    def __init__(self, reads: Reads, conversation: Conversation,
                 count_tokens: Callable[[str, int], int]) -> None:
        self.reads = reads
        self.conversation = conversation
        self.count_tokens = count_tokens

    async def recall(self, req: SearchRequest, caller: Caller, *, top_k: int,
                     session: str | None, tail: int, token_budget: int) -> Block:
        """`req` asks for twice `top_k` candidates: the block keeps what fits."""
        result, memories = await self.reads.smart_search(req)
        ranked = [memories[c.id] for c in result.selected if c.id in memories]
        procedural: list[Memory] = []
        if req.kind is None and req.as_of is None:
            procedural, _ = await self.reads.list_memories(
                Filters(scopes=req.scopes, type="procedural", not_kind="turn"),
                limit=PROCEDURAL_LIMIT, offset=0)
        summary = await self.reads.session_summary(session, caller) if session else None
        recent = (await self.conversation.recent(session, tail, req.scopes)
                  if session and tail else [])
        block = await trio.to_thread.run_sync(  # tokenizing is CPU work: off the loop
            recall.assemble, procedural, ranked, summary, token_budget, top_k,
            self.count_tokens, recent)
        return Block(block, {c.id: round(c.score, 4) for c in result.selected})
