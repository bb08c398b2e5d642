"""The engine: every change to the memories and every read of them.

Files are the truth. A change is made durable in its file first, then the indexes
are updated, and only then does the caller get its answer, so a client reads its
own writes. The engine is a set of collaborators, built by `server/wiring.py`:

- `writes` (writes.py): new memories and changes to one memory;
- `links` (links.py): bidirectional links and merges;
- `sync` (sync.py): the indexes brought in step with the files (hand edits, start-up);
- `reads` (reads.py): the read side, for tools and jobs alike;
- `facts` (facts.py): text to facts, reconciled with what is known;
- `conversation` (conversation.py): a turn in, and a session's recent turns;
- `learning` (learning.py): what is learned from each turn, by the background worker
  (importance, type, facts);
- `upkeep` (upkeep.py): each session's summary, its cap (eviction), and compression;
- `ingest` (ingest.py): notes and transcripts from other tools, idempotently;
- `transfer` (transfer.py): every memory out as JSONL and back in, losslessly;
- `ranking` (ranking.py): a smart search with the search policy's defaults;
- `recall` (recall.py): the `<memory>` block for a prompt;
- `history` (history.py): every version of a memory, and an earlier one back;

and each change goes through one UnitOfWork (unit.py), run by `stores` (stores.py).
Callers outside the engine use its methods, never the stores (tests/test_layers.py);
the corpus is asked through HybridIndex's locked methods (retrieval/neighbours.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog
import trio

from memoryd import allocator
from memoryd.access_counts import AccessCounts
from memoryd.config import Config
from memoryd.engine import stats
from memoryd.engine.conversation import Conversation
from memoryd.engine.facts import Facts
from memoryd.engine.history import History
from memoryd.engine.ingest import Ingest
from memoryd.engine.learning import Learning
from memoryd.engine.links import Links
from memoryd.engine.purge import Purge
from memoryd.engine.ranking import SearchPolicy
from memoryd.engine.reads import Reads
from memoryd.engine.recall import Recall
from memoryd.engine.remote import HISTORY_OFF
from memoryd.engine.requests import UPGRADE_CATEGORY, Changes, NewMemory
from memoryd.engine.stores import Stores
from memoryd.engine.sync import FileSync
from memoryd.engine.transfer import Transfer
from memoryd.engine.upkeep import SessionUpkeep
from memoryd.engine.writes import Writes
from memoryd.errors import InvalidParams
from memoryd.events import EventBus, Subscription
from memoryd.graph.store import GraphStore
from memoryd.graph.topics import TopicGraph
from memoryd.retrieval import int8dot
from memoryd.schema import Memory, utcnow
from memoryd.scopes import Caller
from memoryd.store.catalog import Catalog
from memoryd.store.files import MarkdownStore

if TYPE_CHECKING:
    from memoryd.engine.remote import RemoteSync
    from memoryd.history.git import GitHistory
    from memoryd.ports import ChatModel, Embedder, Reranker

log = structlog.get_logger("memoryd.engine")


__all__ = ["UPGRADE_CATEGORY", "Changes", "Engine", "NewMemory"]


@dataclass
class Engine:
    root: Path
    config: Config
    stores: Stores
    writes: Writes
    links: Links
    sync: FileSync
    reads: Reads
    embedder: Embedder
    graph: TopicGraph
    graph_store: GraphStore
    facts: Facts
    conversation: Conversation
    learning: Learning
    upkeep: SessionUpkeep
    ingest: Ingest
    transfer: Transfer
    ranking: SearchPolicy  # the search policy (engine/ranking.py)
    recall: Recall
    history: History
    purge: Purge
    reranker: Reranker | None = None
    llm: ChatModel | None = None
    git: GitHistory | None = None  # the root's git history (git.enabled)
    remote: RemoteSync | None = None  # sync through git.remote (with the history)
    _closed: bool = field(default=False, repr=False)
    # What a stream of writes that never pauses frees, given back now and then.
    _trim: allocator.Periodic = field(default_factory=allocator.Periodic, repr=False)

    @property
    def files(self) -> MarkdownStore:
        return self.stores.files

    @property
    def catalog(self) -> Catalog:
        return self.stores.catalog

    @property
    def events(self) -> EventBus:
        return self.stores.events

    @property
    def access_counts(self) -> AccessCounts:
        return self.stores.access_counts

    # -- what jobs and the server need of the layout and the events ---------------
    def path_of(self, memory: Memory, current: str | None = None) -> str:
        """Where a memory's file belongs (relative to the root); `current`: where it is
        (its name is kept)."""
        return self.stores.files.relpath_for(memory, current)

    def trash_path(self, path: str, memory_id: str) -> str:
        """Where a soft delete would move the file of `memory_id` at `path`."""
        return self.stores.files.trash_path(path, memory_id)

    def has_file(self, path: str) -> bool:
        return self.stores.files.exists(path)

    @staticmethod
    def is_memory_file(rel: str) -> bool:
        """Whether a path relative to the root is where a memory's file may be."""
        return MarkdownStore.is_memory_path(rel)

    def relpath(self, path: str | Path) -> str:
        """`path` relative to the root; UnsafePath when it is outside."""
        return self.stores.files.relpath(path)

    def announce(self, method: str, params: dict[str, Any], scope: str) -> None:
        """A notification to the subscribers who may see `scope`."""
        self.stores.events.publish(method, params, scope)

    def subscribe(self, can_see: Callable[[str], bool]) -> Subscription:
        """The notifications of the scopes `can_see` lets through, from now on."""
        return self.stores.events.subscribe(can_see)

    def unsubscribe(self, subscription: Subscription) -> None:
        self.stores.events.unsubscribe(subscription)

    def subscription_counts(self) -> dict[str, int]:
        """For `stats`: subscribers now, and the events they missed (a full queue)."""
        return {"subscribers": self.stores.events.subscribers,
                "events_dropped": self.stores.events.dropped}

    def index_state(self) -> str:
        """`new` (no catalog was there), `reset` (one was set aside: corrupted or of
        an older schema) or `kept`, for start-up's log."""
        catalog = self.stores.catalog
        return "reset" if catalog.was_reset else "new" if not catalog.existed else "kept"

    async def persist_vectors(self) -> None:
        """The new memories' vectors to the vector store, in one batch (a write's
        acknowledgement does not wait for chroma); not while chroma still opens (the
        writer thread would wait for it)."""
        hybrid = self.stores.hybrid
        if hybrid.unpersisted and hybrid.vectors.ready:
            await self.stores.workers.write(self._persist_and_trim)

    def _persist_and_trim(self) -> int:
        persisted = self.stores.hybrid.persist_deferred()
        self._trim.tick()  # writes go on: the allocator's free pages given back at times
        return persisted

    async def release_idle(self, idle: float) -> bool:
        """After `idle` seconds with no vector written: the vector store's indexes
        closed (writer thread, the one that uses it) and the memory the allocator holds
        given back; whether the store was closed. What a burst of writes took is
        returned to the system, and the next write opens the store again."""
        vectors = self.stores.hybrid.vectors
        unused = vectors.unused_for()
        if unused is None or unused < idle or self.stores.hybrid.unpersisted:
            return False  # (a glance: the writer thread is asked only when it is due)
        released = await self.stores.workers.write(vectors.release, idle)
        if released:
            allocator.give_back()
        return released

    def snapshot_due(self) -> bool:
        """Enough changed since the corpus snapshot was saved to save it again."""
        return self.sync.snapshots.due()

    async def save_snapshot(self, stopping: bool = False) -> int | None:
        """The corpus snapshot saved (writer thread), unless the last one is of the
        catalog as it is; its size in bytes, None if none was written. `stopping`: not
        when it would wait for the vector store to start (the snapshot follows its
        vectors into the store): the next start catches up from the last one."""
        if self.sync.snapshots.saved():
            return None
        if stopping and self.stores.hybrid.waits_for_vectors:
            log.info("index.snapshot.skipped", reason="the vector store is still "
                     "starting; the next start catches up from the last snapshot")
            return None
        return await self.stores.workers.write(self.sync.snapshots.save_blocking)

    async def save_graph(self, graph: TopicGraph, at: float) -> None:
        """A topic graph (a plan the decay sweep adopted) into graph.sqlite."""
        await trio.to_thread.run_sync(graph.save, self.graph_store, at)

    async def write_generated(self, path: str, body: bytes) -> None:
        """A file the daemon generates (pending.md, memory.md), written atomically. It is
        no unit of work's change, so git is told here."""
        await trio.to_thread.run_sync(self.files.write_atomic, path, body)
        if self.git is not None:
            self.git.changed([path])

    async def sync_remote(self, dry_run: bool = False, scheduled: bool = False
                          ) -> dict[str, Any]:
        """One sync through `git.remote` (engine/remote.py)."""
        if self.remote is None:
            raise InvalidParams("git", HISTORY_OFF)
        return await self.remote.sync(dry_run, scheduled)

    async def scoring(self) -> dict[str, object]:
        """Which path scores int8 vectors on this CPU, and why (int8dot's probe, made
        once a process, off the event loop)."""
        verdict = await trio.to_thread.run_sync(lambda: int8dot.SCORING.verdict)
        return verdict.describe()

    def graph_view(self, caller: Caller, limit: int) -> dict[str, Any]:
        """The topic graph's largest `limit` nodes `caller` may see, with their edges."""
        return self.graph.view(caller.can_see, limit)

    async def stats(self, caller: Caller) -> dict[str, Any]:
        """What `stats` reports of the engine, as `caller` may see it (stats.py)."""
        return await stats.describe(self, caller)

    async def flush_stats(self) -> int:
        """Buffered access counts into their files, in one batch, and the graph's new
        co-occurrence edges into graph.sqlite."""
        await self.stores.workers.write(self.graph.save, self.graph_store, utcnow().timestamp())
        return await self.writes.flush_access_counts()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.graph.save(self.graph_store, utcnow().timestamp())
        self.graph_store.close()
        hybrid = self.stores.hybrid
        if hybrid.waits_for_vectors:  # a stop does not wait for chroma to start
            log.info("vectors.persist_skipped", vectors=len(hybrid.unpersisted),
                     reason="the vector store is still starting; the next start "
                            "writes them (what a kill would leave)")
        else:
            try:  # what no batch wrote yet (derived: a failure costs a re-embedding at start)
                hybrid.persist_deferred()
            except Exception:
                log.exception("vectors.persist_failed")
        self.stores.catalog.close()
        self.stores.hybrid.vectors.close()
        self.embedder.close()
