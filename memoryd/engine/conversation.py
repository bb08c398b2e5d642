"""Conversation: a turn in (memory_remember), and the session's recent turns.

A turn is cleaned and gated inline (lang/gate.py, then the near-duplicate
check against the scope's recent memories), written durably with `pending: true`
and answered; what is learned from it happens in the background (learning.py), and the
session's summary, cap and compression are upkeep.py's.
"""

from __future__ import annotations

from datetime import datetime

import msgspec
from msgspec import UNSET, UnsetType

from memoryd.config import Config
from memoryd.conversation.ring import Ring
from memoryd.engine.learning import Learning
from memoryd.engine.reads import Reads
from memoryd.engine.requests import NewMemory
from memoryd.engine.stores import Stores
from memoryd.engine.writes import Writes
from memoryd.errors import RpcError
from memoryd.lang import gate
from memoryd.lang.sentences import clean
from memoryd.lang.terms import index_text, terms
from memoryd.schema import Memory, as_aware, utcnow
from memoryd.scopes import Caller


class Skipped(msgspec.Struct, kw_only=True):
    """Why a turn was not stored: the gate's reason, or a near-duplicate of a recent
    memory (which one, and how near)."""

    reason: str
    duplicate_of: str | UnsetType = UNSET
    cosine: float | UnsetType = UNSET


class Remembered(msgspec.Struct, kw_only=True):
    """A turn's answer: stored (its id, type and importance as first set, and how many
    secrets were cut from it), or skipped and why."""

    stored: bool
    id: str | UnsetType = UNSET
    type: str | UnsetType = UNSET
    importance: float | UnsetType = UNSET
    redacted: int | UnsetType = UNSET
    skipped: Skipped | UnsetType = UNSET


def _says_more(text: str, other: str) -> bool:
    """Whether `text` has a content word (a stem; a CJK character or pair) `other`
    lacks: "...on Wednesday at 3" says more than "...on Tuesday at 3"."""
    return not set(terms(text)) <= set(terms(other))


class Conversation:
    def __init__(self, stores: Stores, config: Config, reads: Reads, writes: Writes,
                 learning: Learning) -> None:
        self.stores = stores
        self.config = config
        self.reads = reads
        self.writes = writes
        self.learning = learning
        self.ring = Ring(config.conversation.ring)

    async def start(self) -> None:
        """Rebuild the ring from the files (after the start-up sync)."""
        self.ring.fill(await self.stores.workers.read(self.stores.catalog.reader.recent_turns,
                                                      self.config.conversation.ring))

    # -- a turn in ----------------------------------------------------------------------
    async def remember(self, session: str, role: str, content: str, caller: Caller, *,
                       scope: str | None = None, timestamp: datetime | None = None,
                       source: str = "remember", source_path: str | None = None
                       ) -> Remembered:
        scope = scope or caller.default_scope
        caller.check(scope)
        created = as_aware(timestamp) if timestamp else utcnow()
        # The turn is built once, its secrets cut before the gate reads it (the
        # embedding the duplicate check makes is kept for the write).
        new = NewMemory(content=clean(content), session=session, role=role, scope=scope,
                        created_at=created, source=source, source_path=source_path,
                        pending=True)
        built = self.writes.build(new, scope)
        text = built.memory.content
        reason = gate.check(text, self.config.conversation.min_chars)
        if reason is not None:
            return Remembered(stored=False, skipped=Skipped(reason=reason))
        probe = Memory(id="probe", content=text, created_at=created)
        duplicate = await self.stores.workers.read(self._recent_duplicate, index_text(probe),
                                                   text, scope)
        if duplicate is not None:
            self.stores.access_counts.hit(duplicate[0])
            return Remembered(stored=False, skipped=Skipped(
                reason="near_duplicate", duplicate_of=duplicate[0],
                cosine=round(duplicate[1], 4)))
        (result,) = await self.writes.write_many([new], caller, defer_vectors=True,
                                                 built=[built])
        if isinstance(result, RpcError):
            raise result
        memory = result[0]
        self.ring.add(memory)
        self.learning.turn_arrived()
        return Remembered(stored=True, id=memory.id, type=memory.type,
                          importance=memory.importance, redacted=result.redacted or UNSET)

    async def recent(self, session: str, n: int, scopes: list[str] | None) -> list[Memory]:
        """The session's last `n` turns in these scopes, oldest first (as the files say
        now: a turn deleted since is left out)."""
        ids = self.ring.last(session, n, scopes)
        if not ids:
            return []
        found = {m.id: m for m in await self.reads.peek(ids)}
        return [found[i] for i in ids if i in found]

    def _recent_duplicate(self, indexed: str, content: str, scope: str
                          ) -> tuple[str, float] | None:
        """The scope's recent memory nearest to `indexed` (the turn's index text), if it
        is a near-duplicate: as close as `duplicate_cosine` *and* with no content word
        that memory lacks. The model alone is no judge: MiniLM puts "meeting on
        Tuesday" and "...Wednesday" at 0.99, and two unrelated Chinese sentences of one
        shape above 0.92. (The embedding is cached: the write that follows reuses it.)"""
        hybrid = self.stores.hybrid
        vector = hybrid.embedder.embed([indexed])[0]
        (found,) = hybrid.nearest(scope, vector, 1, not_kind="summary",
                                  recent=self.config.conversation.duplicate_window)
        if not found or found[0].cosine < self.config.conversation.duplicate_cosine:
            return None
        other = self.stores.catalog.reader.get(found[0].id)
        if other is None or _says_more(content, other.content):
            return None
        return found[0].id, found[0].cosine

