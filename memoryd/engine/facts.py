"""Facts: text to atomic facts, reconciled with what is known (memory_add, and the
background learning from user turns; a memory's versions are history.py's).

With an LLM: the `facts` task extracts 0-3 facts, each fact's nearest known facts of
the scope are gathered (dense, plus a keyword look-up of the attribute it states),
and one `reconcile` call decides. Without one, or when a call fails: the same steps
with the deterministic extractor and decider (lang/facts.py, reconcile.py).
UPDATE and DELETE never destroy: the old fact moves to trash/ with `replaced_by` and
`superseded_at`, and stays indexed as history for memory_history and `as_of`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import msgspec
import numpy as np
import structlog

from memoryd.config import Config
from memoryd.conversation import reconcile, tasks
from memoryd.conversation.reconcile import Decision, Known
from memoryd.engine.sessions import foreign_session
from memoryd.engine.stores import Stores
from memoryd.engine.unit import UnitOfWork
from memoryd.errors import InvalidParams, NotFound
from memoryd.filters import Filters
from memoryd.lang import facts as extractor
from memoryd.lang import frames, kinds, signals
from memoryd.lang.classify import classify
from memoryd.lang.sentences import clean
from memoryd.llm.client import LlmError
from memoryd.ports import ChatModel
from memoryd.schema import Memory, content_hash, new_id, utcnow
from memoryd.scopes import Caller, is_project

log = structlog.get_logger("memoryd.facts")
NEIGHBOURS = 5  # nearest known facts per new fact
KEY_MATCHES = 10  # known facts found by the attribute's words, per new fact


class FactChange(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What learning did with one fact it read: added it, updated a known one with it
    (`replaces`), deleted the known one it names, or nothing (known already)."""

    text: str
    event: Literal["ADD", "UPDATE", "DELETE", "NONE"]
    id: str | None  # the fact written, or the known one it is about
    reason: str
    replaces: str | None = None  # UPDATE: the fact it superseded


@dataclass
class Learned:
    path: str  # "llm" or "heuristic": who made the decisions
    facts: list[FactChange]

    def changed(self) -> list[str]:
        """Texts of the facts added or updated."""
        return [f.text for f in self.facts if f.event in ("ADD", "UPDATE")]

    def gone(self) -> list[str]:
        """The ids of the known facts retired: deleted, or superseded by an update."""
        retired = (f.replaces if f.event == "UPDATE" else f.id if f.event == "DELETE"
                   else None for f in self.facts)
        return [i for i in retired if i]


class Facts:
    def __init__(self, stores: Stores, config: Config, llm: ChatModel | None) -> None:
        self.stores = stores
        self.config = config
        self.llm = llm

    async def add(self, text: str, caller: Caller, *, scope: str | None = None,
                  session: str | None = None, derived_from: Sequence[str] = (),
                  created_at: datetime | None = None, source: str = "memory_add",
                  stated: list[str] | None = None) -> Learned:
        """The facts `text` states, reconciled with what is known and written.
        `stated`: what the fact rules already read in it (a turn's, read once by the
        learning worker); a model, when configured, still reads the text."""
        scope = scope or caller.default_scope
        caller.check(scope)
        cleaned = clean(text)
        if not cleaned:
            raise InvalidParams("text", "must not be empty or only white space")
        if session is not None:  # before any work (checked again when facts are written)
            refused = await self.stores.workers.write(
                foreign_session, self.stores.catalog, session, scope, {})
            if refused is not None:
                raise refused
        found, path, note = ((stated, "heuristic", None) if stated is not None and self.llm is None
                             else await self._extract(cleaned, is_project(scope)))
        if not found:
            return Learned(path, [])
        vectors = await self.stores.workers.read(self.stores.hybrid.embedder.embed, found)
        known = await self._known(found, vectors, scope)
        decisions, path = await self._decide(found, list(vectors), known, path, note)
        facts = await self.stores.change(lambda uow: self._apply(
            uow, decisions, scope, session, list(derived_from), created_at, source))
        for fact in facts:  # told again: it counts as an access
            if fact.event == "NONE" and fact.id:
                self.stores.access_counts.hit(fact.id)
        return Learned(path, facts)

    # -- extraction ------------------------------------------------------------------
    async def _extract(self, text: str, team: bool = False
                       ) -> tuple[list[str], str, str | None]:
        """(facts, "llm" | "heuristic", why the model was not used); `team`: a
        project's memory (extractor.extract)."""
        if self.llm is None:
            return extractor.extract(text, team=team), "heuristic", None
        try:
            answer = await self.llm.ask_task(tasks.FACTS, tasks.FACTS_SCHEMA,
                                             tasks.FACTS_SYSTEM, text[:8000])
            found = tasks.strings(answer, "facts", extractor.MAX_FACTS,
                                  extractor.MAX_FACT_CHARS)
            return list(dict.fromkeys(found)), "llm", None
        except (LlmError, ValueError) as exc:
            return extractor.extract(text, team=team), "heuristic", f"llm facts failed: {exc}"

    # -- what is known -----------------------------------------------------------------
    async def _known(self, found: list[str], vectors: np.ndarray, scope: str) -> list[Known]:
        """The nearest current facts of the scope to each new fact (dense), and those
        stating the same attribute (keyword look-up)."""
        hybrid = self.stores.hybrid
        catalog = self.stores.catalog

        def run() -> list[Known]:
            ids: dict[str, np.ndarray | None] = {}
            for nearest in hybrid.nearest(scope, vectors, NEIGHBOURS, kind="fact"):
                for neighbour in nearest:
                    ids[neighbour.id] = neighbour.vector
            for fact in found:
                for term in frames.search_terms(fact):
                    memories, _ = catalog.reader.search(term, Filters(scopes=[scope], kind="fact"),
                                                 KEY_MATCHES, 0)
                    for m in memories:
                        ids.setdefault(m.id, None)
            by_id = {m.id: m for m in catalog.reader.get_many(list(ids))}
            return [Known(i, by_id[i].content, v) for i, v in ids.items() if i in by_id]

        return await self.stores.workers.read(run)

    # -- deciding ----------------------------------------------------------------------
    async def _decide(self, found: list[str], vectors: list[np.ndarray], known: list[Known],
                      path: str, note: str | None) -> tuple[list[Decision], str]:
        threshold = self.config.conversation.duplicate_cosine
        if self.llm is not None and known:
            short = {str(n): k.id for n, k in enumerate(known)}
            request = json.dumps({"existing_memories": [
                {"id": str(n), "text": k.text} for n, k in enumerate(known)],
                "new_facts": found}, ensure_ascii=False)
            try:
                answer = await self.llm.ask_task(tasks.RECONCILE, tasks.RECONCILE_SCHEMA,
                                                 tasks.RECONCILE_SYSTEM, request, 1024)
                return reconcile.from_llm(answer, found, short), path
            except (LlmError, reconcile.BadAnswer) as exc:
                note = f"llm reconcile failed: {exc}"
                path = "heuristic"
        alike = reconcile.alike_by(self.stores.hybrid.embedder.embed)
        decisions = await self.stores.workers.read(reconcile.heuristic, found, list(vectors),
                                                   known, threshold, alike)
        if note:
            for d in decisions:
                d.reason += f" ({note})"
        return decisions, path

    # -- applying (writer thread) ---------------------------------------------------------
    def _apply(self, uow: UnitOfWork, decisions: list[Decision], scope: str,
               session: str | None, derived_from: list[str], created_at: datetime | None,
               source: str) -> list[FactChange]:
        now = utcnow()
        when = created_at or now
        refused = foreign_session(uow.catalog, session, scope, {})  # facts join the session
        if refused is not None:
            raise refused
        out: list[FactChange] = []
        added: list[str] = []
        deletes: list[tuple[Decision, FactChange]] = []
        for d in decisions:
            if d.event == "DELETE":
                entry = FactChange(text=d.text, event="DELETE", id=d.target, reason=d.reason)
                deletes.append((d, entry))
                out.append(entry)
                continue
            if d.event == "NONE":
                out.append(FactChange(text=d.text, event="NONE", id=d.target, reason=d.reason))
                continue
            old = None
            if d.event == "UPDATE":
                try:
                    old = uow.load(d.target or "")
                except NotFound:  # gone meanwhile: the new fact is added all the same
                    d.reason += " (the known fact is gone: added)"
            duplicate = uow.catalog.writer.find_duplicate(content_hash(d.text), scope, "fact")
            if duplicate is not None and old is None:
                out.append(FactChange(text=d.text, event="NONE", id=duplicate,
                                      reason="already known (identical text)"))
                continue
            fact = self._fact(d.text, scope, session, derived_from, when, now, source)
            entry = FactChange(text=fact.content, event="UPDATE" if old else "ADD", id=fact.id,
                               reason=d.reason)
            if old is not None:
                memory, path = old
                fact.replaces = [memory.id]
                entry.replaces = memory.id
                self._supersede(uow, memory, path, fact.id, when)
            uow.put(fact, uow.place(fact))
            uow.event("written", scope, id=fact.id, by="facts")
            added.append(fact.id)
            out.append(entry)
        for d, entry in deletes:
            try:
                memory, path = uow.load(d.target or "")
            except NotFound:
                entry.reason = f"{entry.reason} (already gone)"
                continue
            entry.text = memory.content
            self._supersede(uow, memory, path, added[0] if added else None, when)
        return out

    def _fact(self, text: str, scope: str, session: str | None, derived_from: list[str],
              when: datetime, now: datetime, source: str) -> Memory:
        text = self.stores.redactor.clean(text).strip()  # an LLM's answer too
        return Memory(
            id=new_id(), content=text, content_hash=content_hash(text), kind="fact",
            # classify and route_type answer one of CATEGORIES / TYPES, typed as str.
            phase="organized", category=classify(text) or "knowledge",  # type: ignore[arg-type]
            # A project's standing rule is how to work there: procedural, shown at
            # every session's start.
            type=("procedural" if is_project(scope) and kinds.kind_of(text) == "rule"
                  else signals.route_type(text, True)),  # type: ignore[arg-type]
            scope=scope, session=session, source=source,
            importance=signals.importance(0.5, signals.salience(text)),
            derived_from=derived_from, created_at=when, updated_at=now)

    @staticmethod
    def _supersede(uow: UnitOfWork, memory: Memory, path: str, by: str | None,
                   when: datetime) -> None:
        """The old fact leaves the present: to trash/, still indexed as history."""
        memory.replaced_by = by
        memory.superseded_at = max(when, memory.created_at)
        uow.put(memory, uow.files.trash_path(path, memory.id), origin=path)
        uow.event("superseded", memory.scope, id=memory.id, replaced_by=by)
