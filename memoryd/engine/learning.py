"""Learning: what is learned from each turn in the background, the worker that does it.

The worker takes pending turns from the catalog, oldest first, a batch at a time: the
files are the queue, so it is bounded in memory and a restart finds whatever was left.
For each turn: the vector work the reply's path left, importance and type, for a user
turn the facts (reconciled with what is known) and the session's summary; then the turn
is settled and its session kept under its cap (upkeep.py). Nothing slow (a model call)
runs on a reply's path or under the write lock; a turn waits for a quiet moment.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import structlog
import trio

from memoryd.config import Config
from memoryd.conversation import tasks
from memoryd.engine.facts import Facts, Learned
from memoryd.engine.reads import Reads
from memoryd.engine.stores import Stores
from memoryd.engine.upkeep import SessionUpkeep
from memoryd.engine.writes import Writes
from memoryd.lang import facts as extractor
from memoryd.lang import prototypes, signals
from memoryd.llm.client import LlmError
from memoryd.ports import ChatModel
from memoryd.schema import Memory
from memoryd.scopes import Caller, is_project

log = structlog.get_logger("memoryd.conversation")
BATCH = 32  # pending turns taken from the catalog at a time
RETRY_AFTER = 30.0  # seconds, after the worker itself failed
# A turn whose processing failed is tried again after these pauses; after the last, it
# is settled as it is (the formula's importance, no facts): never pending for ever.
TURN_RETRIES = (10.0, 60.0)
QUIET = 0.1  # seconds without a request before the next turn is worked on


class Learning:
    def __init__(self, stores: Stores, config: Config, reads: Reads, writes: Writes,
                 facts: Facts, upkeep: SessionUpkeep, llm: ChatModel | None) -> None:
        self.stores = stores
        self.config = config
        self.reads = reads
        self.writes = writes
        self.facts = facts
        self.upkeep = upkeep
        self.llm = llm
        self._wake: trio.Event | None = None
        # Turns whose processing failed: how often, and when they are tried again.
        self._failed: dict[str, tuple[int, float]] = {}
        self.given_up = 0  # turns settled without their background work, since start
        self._chat = prototypes.Prototypes(
            lambda texts: self.stores.hybrid.embedder.embed(texts)).is_chat
        self._paced = False  # the daemon's worker waits for quiet; tests drain at once
        self._last_turn = -QUIET
        self.working = 0  # turns being processed right now

    def turn_arrived(self) -> None:
        """A turn was just stored: the worker waits for quiet, then takes it."""
        self._last_turn = trio.current_time()
        self.wake()

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
        learns = bool(turn.role == "user" and self.config.conversation.facts and turn.session)
        # The fact rules read the turn once: whether it states something routes its
        # type, and what it states is what Facts learns (without a model).
        # A user's sentence the rules would learn from is first weighed by meaning: is
        # it chit-chat ("I feel really upset") said like a fact (lang/prototypes.py)?
        # The embedder's work runs in a reading thread.
        stated = (await self.stores.workers.read(
            extractor.extract, turn.content, extractor.MAX_FACTS, is_project(turn.scope),
            self._chat) if learns
            else extractor.extract(turn.content, 1, team=is_project(turn.scope)))
        kind = signals.route_type(turn.content, bool(stated))
        if self.llm is not None:
            try:
                answer = await self.llm.ask_task(tasks.IMPORTANCE, tasks.IMPORTANCE_SCHEMA,
                                                 tasks.IMPORTANCE_SYSTEM, turn.content[:4000])
                score = round(tasks.number(answer, "importance"), 4)
            except (LlmError, ValueError):
                pass  # the formula's score stands
        if learns:
            await self.learn(turn.content, Caller(), scope=turn.scope, session=turn.session,
                             derived_from=[turn.id], created_at=turn.created_at,
                             source="remember", stated=stated)
        settled = await self.writes.settle({turn.id: {"importance": score, "type": kind,
                                                      "pending": False}})
        if not settled and await self.reads.peek([turn.id]):  # indexed, not settled:
            # its file is refused (a link, bad front matter); as pending it would be
            # taken up again at once, for ever
            raise RuntimeError(f"turn {turn.id} could not be settled: its file is refused")
        if turn.session:
            await self.upkeep.evict(turn.session)

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
            await self.upkeep.update_summary(session, scope or caller.default_scope,
                                      learned.changed())
        # A summary that states a fact now replaced or deleted is written again, in
        # whatever session that fact was learned ("The user lives in Paris" is gone
        # from it once the move to Berlin is known).
        gone = learned.gone()
        stale = {(m.session, m.scope) for m in (await self.reads.peek(gone) if gone else [])
                 if m.session and m.session != session}
        for other, its_scope in sorted(stale):
            await self.upkeep.update_summary(other, its_scope, learned.changed())
        return learned

