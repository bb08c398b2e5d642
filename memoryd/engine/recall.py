"""Recall: the `<memory>` block for a prompt, and what it was made of.

The ranked memories of a smart search, the scope's procedural memories first (they say
how to behave, whatever the query: unless another kind, or a past time, was asked
for), the session's summary and its latest turns, fitted to a token budget."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import trio

from memoryd.config import RecallConfig
from memoryd.engine.conversation import Conversation
from memoryd.engine.ranking import SearchPolicy
from memoryd.engine.reads import Reads
from memoryd.filters import Filters
from memoryd.lang import past
from memoryd.retrieval import recall
from memoryd.retrieval.query import Knobs
from memoryd.schema import Memory, utcnow
from memoryd.scopes import Caller

PROCEDURAL_LIMIT = 20
START_RECENT = 8  # facts and decisions of each scope a session starts with


@dataclass
class Block:
    block: recall.Recalled
    scores: dict[str, float]  # the ranked memories' scores, by id
    budget: int  # the token budget it was fitted to


class Recall:
    def __init__(self, reads: Reads, ranking: SearchPolicy, conversation: Conversation,
                 count_tokens: Callable[[str, int], int], config: RecallConfig) -> None:
        self.reads = reads
        self.ranking = ranking
        self.conversation = conversation
        self.count_tokens = count_tokens
        self.config = config

    async def recall(self, query: str, where: Filters, knobs: Knobs, caller: Caller, *,
                     top_k: int | None, session: str | None, tail: int | None,
                     token_budget: int | None, procedural: bool = True) -> Block:
        """The block for `query` over `where` (`knobs`: the caller's, as SearchPolicy
        reads them). Twice `top_k`
        candidates are ranked: the block keeps what fits. `procedural`: False leaves out
        the procedural memories a session was shown at its start (`start`). `session`:
        the conversation asking; its own turns are never among the ranked (the model
        has them; its last `tail` are shown as they were said)."""
        top_k = top_k or self.config.top_k
        token_budget = token_budget or self.config.token_budget
        tail = self.config.tail if tail is None else tail
        found = await self.ranking.search(query, where, top_k * 2, knobs)
        result, memories = found.result, found.memories
        ranked = [(memories[c.id], c.relevance) for c in result.selected if c.id in memories]
        how: list[Memory] = []
        scopes = where.scopes
        if procedural and where.kind is None and where.as_of is None:
            how, _ = await self.reads.list_memories(
                Filters(scopes=scopes, type="procedural", not_kind="turn"),
                limit=PROCEDURAL_LIMIT, offset=0)
        # tail 0: the caller holds the whole conversation, its summary included
        summary = (await self.reads.session_summary(session, caller) if session and tail
                   else None)
        recent = (await self.conversation.recent(session, tail, scopes)
                  if session and tail else [])
        if not procedural:  # nor as a ranked one: the session has them
            ranked = [(m, r) for m, r in ranked if m.type != "procedural"]
        if session:  # its own turns are the conversation the model already has
            ranked = [(m, r) for m, r in ranked if m.kind != "turn" or m.session != session]
        shown, kept = recall.choose(how, ranked, utcnow())
        replaced: dict[str, Memory] = {}
        if past.asks_change(query):  # a fact shown says what it replaced
            olds = {m.replaces[0]: m.id for m in kept if m.kind == "fact" and m.replaces}
            replaced = {olds[old.id]: old for old in
                        (await self.reads.peek(list(olds)) if olds else [])}
        block = await trio.to_thread.run_sync(  # tokenizing is CPU work: off the loop
            recall.assemble, shown, kept, summary, token_budget, top_k,
            self.count_tokens, recent, replaced)
        return Block(block, {c.id: round(c.score, 4) for c in result.selected},
                     token_budget)

    async def _newest_others(self, scopes: list[str] | None, n: int) -> list[Memory]:
        """The newest `n` facts of `scopes` that are not procedural. A procedural fact is
        shown above whatever its age: the newest others are looked for past however many
        rules were said since, or rules said late would take every place."""
        found: list[Memory] = []
        page = n + PROCEDURAL_LIMIT
        offset = 0
        while len(found) < n:
            facts, _ = await self.reads.list_memories(
                Filters(scopes=scopes, kind="fact"), limit=page, offset=offset)
            found += [m for m in facts if m.type != "procedural"]
            offset += len(facts)
            if len(facts) < page:
                break
        return found[:n]

    async def start(self, where: Filters, *, token_budget: int | None,
                    recent: int = START_RECENT) -> Block:
        """The block a session starts with, before any prompt: the procedural memories
        of `where`'s scopes, each scope's newest other facts and decisions (in the order
        of `where.scopes`: a project's before global), and the reminders due now."""
        token_budget = token_budget or self.config.token_budget
        procedural, _ = await self.reads.list_memories(
            Filters(scopes=where.scopes, type="procedural", not_kind="turn"),
            limit=PROCEDURAL_LIMIT, offset=0)
        learned: list[Memory] = []
        for scopes in [[s] for s in where.scopes] if where.scopes else [None]:
            facts = await self._newest_others(scopes, recent)
            decisions, _ = await self.reads.list_memories(
                Filters(scopes=scopes, category="decisions", not_kind="turn"),
                limit=recent, offset=0)
            learned += sorted(facts + decisions, key=lambda m: m.created_at,
                              reverse=True)[:recent]
        pending = [*await self.reads.due_reminders(utcnow()),
                   *await self.reads.announced_reminders()]
        due = [m for m in pending if where.scopes is None or m.scope in where.scopes]
        shown = sorted(procedural, key=lambda m: (-m.importance, -m.created_at.timestamp()))
        ranked = list({m.id: m for m in due + learned}.values())
        block = await trio.to_thread.run_sync(
            recall.assemble, shown, ranked, None, token_budget, len(ranked),
            self.count_tokens, [], {})
        return Block(block, {}, token_budget)
