"""Conversation: turns in (memory_remember), and what is learned from them in the
background (importance, type, facts, the session summary, eviction), plus the
`compress` job's folding of old sessions.

A turn is cleaned and gated inline (conversation/gate.py, then the near-duplicate
check against the scope's recent memories), written durably with `pending: true`
and answered. The background worker takes pending turns from the catalog, oldest
first, a batch at a time: the files are the queue, so it is bounded in memory and a
restart finds whatever was left. Nothing slow (a model call) runs on a reply's path
or under the write lock.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from datetime import datetime
from typing import Any

import numpy as np
import structlog
import trio

from memoryd.config import Config
from memoryd.conversation import facts as extractor
from memoryd.conversation import gate, signals, summary, tasks
from memoryd.conversation.ring import Ring
from memoryd.conversation.text import clean
from memoryd.engine.facts import Facts, Learned
from memoryd.engine.reads import Reads
from memoryd.engine.requests import NewMemory
from memoryd.engine.stores import Stores
from memoryd.engine.unit import UnitOfWork
from memoryd.engine.writes import Writes
from memoryd.errors import InvalidParams, NotFound, RpcError
from memoryd.llm.client import LlmError
from memoryd.ports import ChatModel
from memoryd.retrieval.text import index_text, terms
from memoryd.schema import Memory, as_aware, content_hash, new_id, utcnow
from memoryd.scopes import Caller

log = structlog.get_logger("memoryd.conversation")
BATCH = 32  # pending turns taken from the catalog at a time
RETRY_AFTER = 30.0  # seconds, after the worker itself failed
# A turn whose processing failed is tried again after these pauses; after the last, it
# is settled as it is (the formula's importance, no facts): never pending for ever.
TURN_RETRIES = (10.0, 60.0)
QUIET = 0.1  # seconds without a request before the next turn is worked on


def _says_more(text: str, other: str) -> bool:
    """Whether `text` has a content word (a stem; a CJK character or pair) `other`
    lacks: "...on Wednesday at 3" says more than "...on Tuesday at 3"."""
    return not set(terms(text)) <= set(terms(other))


def summary_id(session: str) -> str:
    """The one summary memory of a session has a fixed id."""
    return "summary-" + hashlib.blake2b(session.encode(), digest_size=8).hexdigest()


class Conversation:
    def __init__(self, stores: Stores, config: Config, reads: Reads, writes: Writes,
                 facts: Facts, llm: ChatModel | None) -> None:
        self.stores = stores
        self.config = config
        self.reads = reads
        self.writes = writes
        self.facts = facts
        self.llm = llm
        self.ring = Ring(config.conversation.ring)
        self._wake: trio.Event | None = None
        # Turns whose processing failed: how often, and when they are tried again.
        self._failed: dict[str, tuple[int, float]] = {}
        self.given_up = 0  # turns settled without their background work, since start
        self._paced = False  # the daemon's worker waits for quiet; tests drain at once
        self._last_turn = -QUIET
        self.working = 0  # turns being processed right now

    async def start(self) -> None:
        """Rebuild the ring from the files (after the start-up sync)."""
        self.ring.fill(await self.stores.workers.read(self.stores.catalog.reader.recent_turns,
                                                      self.config.conversation.ring))

    # -- a turn in ----------------------------------------------------------------------
    async def remember(self, session: str, role: str, content: str, caller: Caller, *,
                       scope: str | None = None, timestamp: datetime | None = None,
                       source: str = "remember", source_path: str | None = None
                       ) -> dict[str, Any]:
        scope = scope or caller.default_scope
        caller.check(scope)
        # Secrets out before the gate: its embedding is kept for the write.
        text, redacted = self.stores.redactor.scrub(clean(content))
        if not text.strip():
            raise InvalidParams("content", "must not be empty or only white space")
        reason = gate.check(text, self.config.conversation.min_chars)
        if reason is not None:
            return {"stored": False, "skipped": {"reason": reason}}
        created = as_aware(timestamp) if timestamp else utcnow()
        probe = Memory(id="probe", content=text, created_at=created)
        duplicate = await self.stores.workers.read(self._recent_duplicate, index_text(probe),
                                                   text, scope)
        if duplicate is not None:
            self.stores.access_counts.hit(duplicate[0])
            return {"stored": False, "skipped": {"reason": "near_duplicate",
                                                 "duplicate_of": duplicate[0],
                                                 "cosine": round(duplicate[1], 4)}}
        (result,) = await self.writes.write_many([NewMemory(
            content=text, session=session, role=role, scope=scope, created_at=created,
            source=source, source_path=source_path, pending=True)], caller,
            defer_vectors=True)
        if isinstance(result, RpcError):
            raise result
        memory = result[0]
        self.ring.add(memory)
        self._last_turn = trio.current_time()
        self.wake()
        return {"id": memory.id, "stored": True, "type": memory.type,
                "importance": memory.importance} | (
                    {"redacted": sum(redacted.values())} if redacted else {})

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

    # -- the background worker ------------------------------------------------------------
    def wake(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def backlog(self) -> int:
        """Turns still waiting for background work (or being worked on)."""
        waiting = await self.stores.workers.read(self.stores.catalog.reader.count_pending)
        return max(waiting, self.working)

    @property
    def failed(self) -> int:
        """Turns whose processing failed and that wait to be tried again."""
        return len(self._failed)

    async def run_forever(self) -> None:
        """Work through the backlog whenever there is some. Each turn waits for a
        quiet moment (no turn arrived for QUIET seconds): learning never competes with
        a client sending turns and waiting for its replies."""
        self._paced = True
        while True:
            self._wake = trio.Event()
            try:
                await self.drain()
            except Exception:  # the catalog unreadable a moment: try again later
                log.exception("conversation.drain_failed")
                await trio.sleep(RETRY_AFTER)
                continue
            retry = min((at for _, at in self._failed.values()), default=None)
            with trio.move_on_at(retry if retry is not None else math.inf):
                await self._wake.wait()

    async def drain(self) -> int:
        """Work through every pending turn that is due; returns how many were
        processed."""
        done = 0
        while True:
            now = trio.current_time()
            waiting = {i for i, (_, at) in self._failed.items() if at > now}
            batch = [t for t in await self.stores.workers.read(
                self.stores.catalog.reader.pending_turns, BATCH + len(waiting))
                if t.id not in waiting][:BATCH]
            if not batch:
                return done
            for turn in batch:
                await self._quiet()
                self.working = 1
                try:
                    await self.process(turn)
                    self._failed.pop(turn.id, None)
                    done += 1
                except Exception as exc:  # one bad turn never stops the others
                    await self._failed_turn(turn, exc)
                finally:
                    self.working = 0

    async def _failed_turn(self, turn: Memory, exc: Exception) -> None:
        """Try it again later; after the last retry, settle it as it stands."""
        failures = self._failed.get(turn.id, (0, 0.0))[0] + 1
        if failures <= len(TURN_RETRIES):
            log.exception("conversation.turn_failed", id=turn.id, failures=failures,
                          retry_in_s=TURN_RETRIES[failures - 1])
            self._failed[turn.id] = (failures, trio.current_time()
                                     + TURN_RETRIES[failures - 1])
            return
        try:
            await self.writes.settle({turn.id: {"pending": False}})
        except Exception:
            log.exception("conversation.turn_not_settled", id=turn.id)
            self._failed[turn.id] = (failures, trio.current_time() + TURN_RETRIES[-1])
            return
        self._failed.pop(turn.id, None)
        self.given_up += 1
        log.error("conversation.turn_given_up", id=turn.id, failures=failures,
                  error=str(exc)[:300], hint="kept as it was said; no facts from it")

    async def _quiet(self) -> None:
        while self._paced and (idle := trio.current_time() - self._last_turn) < QUIET:
            await trio.sleep(QUIET - idle)

    async def process(self, turn: Memory) -> None:
        """The vector work left by the reply's path; importance and type; for a user
        turn, facts then the session summary; then the turn is settled (its file
        updated) and the session kept under its cap."""
        hybrid = self.stores.hybrid
        if hybrid.stale_context or hybrid.unpersisted:
            await self.stores.workers.write(hybrid.flush_deferred, self.stores.catalog.writer.load)
        vectors = await self.reads.vectors([turn.id])
        vector = vectors.get(turn.id)
        centroid = await self.stores.workers.read(self._centroid, turn.scope, turn.id)
        score = signals.importance(
            signals.novelty(vector, centroid) if vector is not None else 1.0,
            signals.salience(turn.content))
        kind = signals.route_type(turn.content, bool(extractor.extract(turn.content, 1)))
        if self.llm is not None:
            try:
                answer = await self.llm.ask_task(tasks.IMPORTANCE, tasks.IMPORTANCE_SCHEMA,
                                                 tasks.IMPORTANCE_SYSTEM, turn.content[:4000])
                score = round(tasks.number(answer, "importance"), 4)
            except (LlmError, ValueError):
                pass  # the formula's score stands
        if turn.role == "user" and self.config.conversation.facts and turn.session:
            await self.learn(turn.content, Caller(), scope=turn.scope, session=turn.session,
                             derived_from=[turn.id], created_at=turn.created_at,
                             source="remember")
        settled = await self.writes.settle({turn.id: {"importance": score, "type": kind,
                                                      "pending": False}})
        if not settled and await self.reads.peek([turn.id]):  # indexed, not settled:
            # its file is refused (a link, bad front matter); as pending it would be
            # taken up again at once, for ever
            raise RuntimeError(f"turn {turn.id} could not be settled: its file is refused")
        if turn.session:
            await self.evict(turn.session)

    def _centroid(self, scope: str, exclude: str) -> np.ndarray | None:
        return self.stores.hybrid.centroid(scope, exclude)

    async def learn(self, text: str, caller: Caller, *, scope: str | None = None,
                    session: str | None = None, **more: Any) -> Learned:
        """Facts from `text` (Facts.add), then, when a fact of a session was added or
        changed, that session's summary (memory_add and user turns alike)."""
        learned = await self.facts.add(text, caller, scope=scope, session=session, **more)
        if not self.config.conversation.summaries:
            return learned
        if session and learned.changed():
            await self.update_summary(session, scope or caller.default_scope,
                                      learned.changed())
        # A summary that states a fact now replaced or deleted is written again, in
        # whatever session that fact was learned ("The user lives in Paris" is gone
        # from it once the move to Berlin is known).
        gone = [f["replaces"] if f["event"] == "UPDATE" else f["id"] for f in learned.facts
                if f["event"] == "DELETE" or (f["event"] == "UPDATE" and f.get("replaces"))]
        stale = {(m.session, m.scope) for m in (await self.reads.peek(gone) if gone else [])
                 if m.session and m.session != session}
        for other, its_scope in sorted(stale):
            await self.update_summary(other, its_scope, learned.changed())
        return learned

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
