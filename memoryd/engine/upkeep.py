"""Session upkeep: each session's rolling summary, its turns kept under its cap
(eviction), and the `compress` job's folding of old sessions into one memory each."""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

import structlog

from memoryd.config import Config
from memoryd.conversation import summary, tasks
from memoryd.engine.reads import Reads
from memoryd.engine.stores import Stores
from memoryd.engine.unit import UnitOfWork
from memoryd.errors import NotFound
from memoryd.llm.client import LlmError
from memoryd.ports import ChatModel
from memoryd.schema import Memory, content_hash, new_id, utcnow

log = structlog.get_logger("memoryd.conversation")


def summary_id(session: str) -> str:
    """The one summary memory of a session has a fixed id."""
    return "summary-" + hashlib.blake2b(session.encode(), digest_size=8).hexdigest()


class SessionUpkeep:
    def __init__(self, stores: Stores, config: Config, reads: Reads,
                 llm: ChatModel | None) -> None:
        self.stores = stores
        self.config = config
        self.reads = reads
        self.llm = llm

    # -- the session summary ----------------------------------------------------------------
    async def update_summary(self, session: str, scope: str, new_facts: list[str]) -> Memory:
        catalog = self.stores.catalog
        facts = await self.stores.workers.read(catalog.reader.session_memories, session, "fact")
        turns = await self.stores.workers.read(catalog.reader.session_memories, session, "turn")
        previous = await self.reads.session_summary(session)
        text = None
        if self.llm is not None:
            request = json.dumps({"previous_summary": previous, "new_facts": new_facts,
                                  "turns": [f"{t.role}: {t.content[:1000]}"
                                            for t in turns[-6:]]}, ensure_ascii=False)
            try:
                text = tasks.text(await self.llm.ask_task(
                    tasks.SUMMARY, tasks.SUMMARY_SCHEMA, tasks.SUMMARY_SYSTEM, request, 1024),
                    "summary")
            except (LlmError, ValueError):
                text = None
        if text is None:
            text = summary.rolling([f for f in facts if f.scope == scope],
                                   [t for t in turns if t.scope == scope])
        return await self.stores.change(lambda uow: self._put_summary(uow, session, scope,
                                                                      text))

    def _put_summary(self, uow: UnitOfWork, session: str, scope: str, text: str) -> Memory:
        now = utcnow()
        memory = Memory(id=summary_id(session), kind="summary", phase="organized",
                        category="knowledge", type="semantic", scope=scope, session=session,
                        source="summary", created_at=now)
        path = uow.place(memory)
        record = uow.catalog.writer.record_by_path(path)  # the summary so far (maybe by hand)
        if record is not None:
            memory, path = uow.load(record.id)
            memory.version += 1
        memory.content, memory.content_hash, memory.updated_at = text, content_hash(text), now
        uow.put(memory, uow.place(memory, path), origin=path)
        uow.event("updated", scope, id=memory.id, by="summary")
        return memory

    # -- eviction -------------------------------------------------------------------------
    async def evict(self, session: str) -> int:
        """Turns over `conversation.max_entries` in a session go to the trash, oldest
        first; facts and summaries are exempt."""
        cap = self.config.conversation.max_entries

        def run(uow: UnitOfWork) -> int:
            turns = uow.catalog.writer.session_turn_paths(session)
            moved = 0
            for memory_id, _, _ in turns[: max(0, len(turns) - cap)]:
                try:
                    memory, path = uow.load(memory_id)
                except NotFound:
                    continue
                uow.trash(memory, path)
                uow.event("deleted", memory.scope, id=memory_id, by="eviction")
                moved += 1
            return moved

        moved = await self.stores.change(run)
        if moved:
            log.info("conversation.evicted", session=session, turns=moved)
        return moved

    # -- compression: the `compress` job ----------------------------------------------------
    async def compress(self, threshold: int, dry_run: bool) -> list[dict[str, Any]]:
        """In each scope with more than `threshold` uncompressed sessions, the oldest
        half are each summarised into a semantic memory; their turns are marked
        compressed (kept, out of retrieval unless include_compressed)."""
        sessions = await self.stores.workers.read(self.stores.catalog.reader.uncompressed_sessions)
        by_scope: dict[str, list[str]] = {}
        for scope, session, _ in sessions:
            by_scope.setdefault(scope, []).append(session)
        done: list[dict[str, Any]] = []
        for scope, names in by_scope.items():
            if len(names) <= threshold:
                continue
            for session in names[: len(names) // 2]:
                turns = [t for t in await self.stores.workers.read(
                    self.stores.catalog.reader.session_memories, session, "turn")
                    if t.scope == scope and not t.compressed]
                if not turns:
                    continue
                text = await self._compressed_text(turns)
                if dry_run:
                    done.append({"scope": scope, "session": session, "turns": len(turns),
                                 "summary": text})
                    continue
                memory = await self.stores.change(functools.partial(
                    self._fold, scope=scope, session=session, turns=turns, text=text))
                done.append({"scope": scope, "session": session, "turns": len(turns),
                             "id": memory.id, "summary": text})
        return done

    async def _compressed_text(self, turns: list[Memory]) -> str:
        if self.llm is not None:
            conversation = "\n".join(f"{t.role}: {t.content[:2000]}" for t in turns)[:16000]
            try:
                return tasks.text(await self.llm.ask_task(
                    tasks.COMPRESS, tasks.COMPRESS_SCHEMA, tasks.COMPRESS_SYSTEM,
                    f"Conversation:\n{conversation}", 512), "summary")
            except (LlmError, ValueError):
                pass
        return summary.compressed(turns)

    def _fold(self, uow: UnitOfWork, scope: str, session: str, turns: list[Memory],
              text: str) -> Memory:
        now = utcnow()
        memory = Memory(id=new_id(), content=text, content_hash=content_hash(text),
                        kind="note", phase="organized", category="knowledge", type="semantic",
                        scope=scope, source="compress", compression_source=True,
                        source_session=session, created_at=turns[-1].created_at,
                        updated_at=now, importance=max(t.importance for t in turns))
        uow.put(memory, uow.place(memory))
        for turn in turns:
            try:
                current, path = uow.load(turn.id)
            except NotFound:
                continue
            current.compressed = True
            uow.put(current, path)
        uow.event("written", scope, id=memory.id, by="compress")
        return memory
