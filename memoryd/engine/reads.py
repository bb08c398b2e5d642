"""Reads: the read side every tool and job goes through.

Everything that touches the catalog's reader connection or the in-memory corpus
runs in the reader thread (never on the event loop). Access hits still in the
buffer are overlaid on what is returned, so a reply shows every read at once.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

import numpy as np

from memoryd.access_counts import AccessCounts
from memoryd.engine.workers import Workers
from memoryd.errors import InvalidParams, NotFound
from memoryd.filters import Filters
from memoryd.graph.topics import TopicGraph
from memoryd.lang.names import key
from memoryd.retrieval.hybrid import HybridIndex
from memoryd.retrieval.pipeline import SearchRequest, SearchResult, SmartSearch
from memoryd.schema import Memory
from memoryd.scopes import Caller
from memoryd.store import frontmatter
from memoryd.store.catalog import Catalog
from memoryd.store.catalog_entities import Named
from memoryd.store.files import MarkdownStore, UnreadableMemory, UnsafePath

MIN_PREFIX = 4  # shorter id prefixes are not looked up
FULL_ID = 36  # a uuid4: an id this long is not looked up as a prefix in the trash


def _reminder(memory: Memory) -> dict[str, Any]:
    return {"id": memory.id, "content": memory.content, "scope": memory.scope,
            "due_at": memory.due_at.isoformat() if memory.due_at else None}


class Reads:
    def __init__(self, files: MarkdownStore, catalog: Catalog, hybrid: HybridIndex,
                 searcher: SmartSearch, graph: TopicGraph, access_counts: AccessCounts,
                 workers: Workers) -> None:
        self.files = files
        self.catalog = catalog
        self.hybrid = hybrid
        self.searcher = searcher
        self.graph = graph
        self.access_counts = access_counts
        self.workers = workers

    def _overlaid(self, memories: list[Memory]) -> list[Memory]:
        return [self.access_counts.overlay(m) for m in memories]

    async def resolve_id(self, given: str, field: str = "id") -> str:
        """The full id of which `given` is a unique prefix (4 characters or more, as
        memoryctl's tables show ids), in the index or else in the trash; `given` itself
        when it is an id or matches nothing (the tool then says not found)."""
        found = self.catalog.inline.ids_with_prefix(given)  # an index range: microseconds
        if not found and MIN_PREFIX <= len(given) < FULL_ID:  # a prefix of a deleted one?
            found = await self.workers.read(lambda: sorted(
                {i for i, _ in self.files.trashed() if i.startswith(given)})[:2])
        if not found or found[0] == given or len(given) < MIN_PREFIX:
            return given
        if len(found) > 1:
            raise InvalidParams(field, f"{given!r} is the start of more than one memory "
                                       "id: give more of it")
        return found[0]

    async def reminders(self, caller: Caller, upcoming: int = 5) -> dict[str, Any]:
        """Announced reminders still kept (pending.md lists them) and the next ones due,
        of the scopes the caller may see."""
        def run() -> dict[str, Any]:
            due = [m for m in self.catalog.reader.announced_reminders() if caller.can_see(m.scope)]
            nxt = [m for m in self.catalog.reader.upcoming_reminders(upcoming * 4)
                   if caller.can_see(m.scope)][:upcoming]
            return {"due": [_reminder(m) for m in due], "upcoming": [_reminder(m) for m in nxt]}

        return await self.workers.read(run)

    async def trashed(self, caller: Caller, limit: int, offset: int
                      ) -> tuple[list[tuple[Memory, str]], int]:
        """Soft-deleted memories the caller may see, most recently deleted first, with
        their paths under trash/ (replaced facts, which are history, are not listed)."""
        def run() -> list[tuple[Memory, str, float]]:
            newest: dict[str, tuple[Memory, str, float]] = {}
            for named, rel in self.files.trashed():
                try:
                    memory = self.files.read_memory(rel, named)
                    deleted = (self.files.root / rel).lstat().st_mtime
                except (UnreadableMemory, OSError):
                    continue
                if memory.replaced_by or memory.superseded_at or not caller.can_see(
                        memory.scope) or self.catalog.reader.get_many([memory.id]):
                    continue
                kept = newest.get(memory.id)
                if kept is None or memory.version > kept[0].version:
                    newest[memory.id] = (memory, rel, deleted)
            return sorted(newest.values(), key=lambda t: -t[2])

        found = await self.workers.read(run)
        return [(m, rel) for m, rel, _ in found[offset: offset + limit]], len(found)

    async def read(self, memory_id: str, caller: Caller, *, count_access: bool = True) -> Memory:
        # A point read by id takes microseconds, on the event loop's own connection.
        memory = self.catalog.inline.get(memory_id)
        if memory is None:
            raise NotFound(f"no memory with id {memory_id!r}")
        caller.check(memory.scope)
        if count_access:
            self.access_counts.hit(memory_id)
        return self.access_counts.overlay(memory)

    async def list_memories(self, filters: Filters, limit: int, offset: int,
                            order: str = "newest", replaced: bool = False
                            ) -> tuple[list[Memory], int]:
        """A page; with `replaced`, the facts its memories replaced too, by when each
        was made (`total` counts the live ones)."""
        memories, total = await self.workers.read(self.catalog.reader.list_memories, filters,
                                                  limit, offset, order)
        if replaced:
            memories = await self._with_replaced(memories, limit, newest=order != "oldest")
        return self._overlaid(memories), total

    async def search(self, query: str, filters: Filters, limit: int,
                     offset: int) -> tuple[list[Memory], int]:
        memories, total = await self.workers.read(self.catalog.reader.search, query, filters, limit,
                                                  offset)
        return self._overlaid(memories), total

    async def entities(self, filters: Filters, limit: int, offset: int
                       ) -> tuple[list[Named], int]:
        """The entities the memories `filters` admit name, most often named first."""
        return await self.workers.read(self.catalog.reader.entities, filters, limit, offset)

    async def entity(self, filters: Filters, name: str, limit: int
                     ) -> tuple[Named | None, list[Memory], list[Named]]:
        """One entity (by any spelling of its name), its newest `limit` memories oldest
        first with the facts they replaced (superseded, `superseded_at` set: what was
        true of it before), and the entities most often named beside it."""
        found, memories, beside = await self.workers.read(
            self.catalog.reader.entity, filters, key(name), limit)
        timeline = await self._with_replaced(memories, limit)
        return found, self._overlaid(timeline), beside

    async def _with_replaced(self, memories: list[Memory], limit: int, newest: bool = False
                             ) -> list[Memory]:
        """These memories and the facts they replaced, by when each was made."""
        older = await self.workers.read(self._replaced, memories, limit)
        return sorted([*memories, *older], key=lambda m: m.created_at, reverse=newest)

    def _replaced(self, memories: list[Memory], limit: int) -> list[Memory]:
        """The versions these facts replaced, back along `replaces` (at most `limit`)."""
        seen = {m.id for m in memories}
        wanted = [r for m in memories for r in m.replaces if r not in seen]
        found: list[Memory] = []
        while wanted and len(found) < limit:
            batch = self.catalog.reader.get_many(list(dict.fromkeys(wanted)))
            wanted = []
            for old in batch:
                if old.id not in seen and len(found) < limit:
                    seen.add(old.id)
                    found.append(old)
                    wanted += [r for r in old.replaces if r not in seen]
        return found

    async def link_graph(self, caller: Caller, limit: int) -> dict[str, Any]:
        """The whole store's link graph as the web view draws it: the `limit` most
        linked memories `caller` may see (title, category, how many links), and the
        links between them, each once."""
        def run() -> tuple[set[tuple[str, str]], Counter[str], list[str], list[Memory]]:
            pairs: set[tuple[str, str]] = set()
            for a, b, scope_a, scope_b in self.catalog.reader.link_pairs():
                if a != b and caller.can_see(scope_a) and caller.can_see(scope_b):
                    pairs.add((a, b) if a < b else (b, a))
            degree = Counter(i for pair in pairs for i in pair)
            top = sorted(degree, key=lambda i: (-degree[i], i))[:limit]
            return pairs, degree, top, self.catalog.reader.get_many(top)

        pairs, degree, top, shown = await self.workers.read(run)
        order = {memory_id: n for n, memory_id in enumerate(top)}
        nodes = [{"id": m.id, "title": m.title, "category": m.category, "scope": m.scope,
                  "links": degree[m.id]} for m in sorted(shown, key=lambda m: order[m.id])]
        edges = [{"source": a, "target": b} for a, b in sorted(pairs)
                 if a in order and b in order]
        return {"nodes": nodes, "edges": edges, "linked": len(degree),
                "truncated": len(degree) > len(nodes)}

    async def backlinks(self, memory_id: str, caller: Caller) -> list[Memory]:
        await self.read(memory_id, caller, count_access=False)

        def run() -> list[Memory]:
            return self.catalog.reader.get_many(self.catalog.reader.backlinks(memory_id))

        return [m for m in self._overlaid(await self.workers.read(run)) if caller.can_see(m.scope)]

    async def smart_search(self, req: SearchRequest, every_candidate: bool = False
                           ) -> tuple[SearchResult, dict[str, Memory]]:
        """Rank, then load the kept memories (or every candidate, for explain); access
        counts go to the buffer, co-occurrence edges to the graph (in memory)."""
        def run() -> tuple[SearchResult, dict[str, Memory]]:
            result = self.searcher.run(req)
            shown = result.candidates if every_candidate else result.selected
            return result, {m.id: m for m in self.catalog.reader.get_many([c.id for c in shown])}

        with self.searcher.wanted():  # counted while it waits for a turn, too
            result, memories = await self.workers.score(run)
        for c in result.selected:
            self.access_counts.hit(c.id)
        if not every_candidate and result.graph is not None:
            self.graph.co_occur(result.graph.co_occurring)  # saved with the access counts
        return result, {k: self.access_counts.overlay(m) for k, m in memories.items()}

    async def session_summary(self, session: str, caller: Caller | None = None) -> str | None:
        """The rolling summary of a session (sessions/<session>/summary.md), if any, and
        if `caller` (when given) may see its scope: a session is one scope's."""
        def run() -> str | None:
            try:  # a hand-made link, FIFO or bad front matter: no summary
                data = self.files.read_bytes(f"sessions/{session}/summary.md")
                if data is None:
                    return None
                memory = frontmatter.parse(data.decode("utf-8", "replace"), session).memory
            except (UnsafePath, frontmatter.FrontMatterError):
                return None
            return memory.content if caller is None or caller.can_see(memory.scope) else None

        return await self.workers.read(run)

    async def peek(self, ids: list[str]) -> list[Memory]:
        """Memories by id, as the catalog has them; no access is counted."""
        return await self.workers.read(self.catalog.reader.get_many, ids)

    async def vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        """The stored embedding of each memory that has one (copies)."""
        return await self.workers.read(self.hybrid.own_vectors, ids)

    # -- what the jobs look for ------------------------------------------------------
    async def unswept_turns(self) -> list[Memory]:
        """Turns in no episode yet (with pending access counts), by scope, session, time."""
        return self._overlaid(await self.workers.read(self.catalog.reader.unswept_turns))

    async def due_reminders(self, now: datetime) -> list[Memory]:
        return await self.workers.read(self.catalog.reader.due_reminders, now.timestamp())

    async def announced_reminders(self) -> list[Memory]:
        return await self.workers.read(self.catalog.reader.announced_reminders)

    async def notes(self) -> list[Memory]:
        """A snapshot of every memory but conversation turns, with pending access counts."""
        return self._overlaid(await self.workers.read(self.catalog.reader.notes))

    async def expired_inbox(self, now: datetime) -> list[tuple[str, str]]:
        """(id, path) of inbox memories whose TTL has passed by `now`."""
        return await self.workers.read(self.catalog.reader.expired_inbox, now.timestamp())

    async def never_accessed_organized(self, created_before: datetime
                                       ) -> list[tuple[str, str]]:
        """(id, path) of organized notes created before the cut-off and never accessed,
        counting the hits still in the buffer."""
        found = await self.workers.read(self.catalog.reader.unaccessed_organized,
                                        created_before.timestamp())
        return [(i, path) for i, path in found if not self.access_counts.pending(i)]

    async def inbox_access_counts(self) -> dict[str, tuple[str, int]]:
        """id -> (path, access count, buffered hits included) of every inbox memory."""
        counts = await self.workers.read(self.catalog.reader.inbox_access_counts)
        out = {}
        for memory_id, (path, in_file) in counts.items():
            pending = self.access_counts.pending(memory_id)
            out[memory_id] = (path, in_file + (pending.count if pending else 0))
        return out

    async def counts(self, scopes: list[str] | None = None) -> dict[str, Any]:
        return await self.workers.read(self.catalog.reader.counts, scopes)
