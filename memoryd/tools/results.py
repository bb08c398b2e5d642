"""What each tool returns: a msgspec Struct per result, and `RESULTS`, the table of
them by tool. MCP's `outputSchema` (which a client checks `structuredContent` against)
is generated from these Structs, as `inputSchema` is from the params.

A result that is a memory with more (a write's `duplicate`, a search's `score`) is a
subclass of `WireMemory`: the memory's front-matter fields and content, then its own.
tools/outputs.py makes the schemas; tests/tools/test_results.py runs every tool and
checks its result against its schema.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from memoryd.engine.conversation import Remembered
from memoryd.engine.facts import FactChange
from memoryd.engine.history import VersionEntry
from memoryd.engine.ingest import LISTED, Report
from memoryd.engine.purge import PurgeReport
from memoryd.engine.transfer import ImportResult
from memoryd.schema import Memory


class WireMemory(Memory, kw_only=True):
    """A memory as a tool returns it: front-matter fields plus `content`; `extra` (keys
    a user wrote that memoryd does not know) only when there are some."""

    # Left out of the answer when empty, where the file keeps it always.
    extra: dict[str, Any] | UnsetType = UNSET  # type: ignore[assignment]


W = TypeVar("W", bound="WireMemory")


def wire(memory: Memory, cls: type[W], **more: Any) -> W:
    """`memory` as the result `cls`, with `more` (that class's own fields)."""
    fields = msgspec.structs.asdict(memory)
    fields["extra"] = fields["extra"] or UNSET
    return cls(**fields, **more)


def memory(m: Memory) -> WireMemory:
    return wire(m, WireMemory)


def memories(ms: list[Memory]) -> list[WireMemory]:
    return [wire(m, WireMemory) for m in ms]


# -- memories with more -------------------------------------------------------------
class UpdateResult(WireMemory, kw_only=True):
    # How many secrets were cut out of what was given before it was written (the count
    # the engine made as it cut them); only when some were.
    redacted: int | UnsetType = UNSET


class WriteResult(UpdateResult, kw_only=True):
    duplicate: bool  # the same content was already stored in that scope: that memory


class ReadResult(WireMemory, kw_only=True):
    entities: list[str]


class RenameResult(WireMemory, kw_only=True):
    path: str  # the file before
    to: str  # the file now


class RestoreResult(WireMemory, kw_only=True):
    restored_from: int | None  # the version brought back (None: from the trash)


class TrashedMemory(WireMemory, kw_only=True):
    trash: str  # its file under trash/


class ScoredMemory(WireMemory, kw_only=True):
    score: float
    scores: dict[str, Any]  # each stage's score (and signals) by name
    graph: dict[str, Any] | UnsetType = UNSET  # reached through this topic node


class RecalledMemory(WireMemory, kw_only=True):
    score: float | None  # None: shown without ranking (procedural, the summary)


# -- the rest -----------------------------------------------------------------------
class DeleteResult(msgspec.Struct, kw_only=True):
    id: str
    deleted: bool
    trash: str


class ListResult(msgspec.Struct, kw_only=True):
    memories: list[WireMemory]
    total: int
    limit: int
    offset: int


class SearchResult(ListResult, kw_only=True):
    query: str


class LinkResult(msgspec.Struct, kw_only=True):
    source: str
    target: str
    linked: bool


class BacklinksResult(msgspec.Struct, kw_only=True):
    id: str
    memories: list[WireMemory]


class EntityRow(msgspec.Struct, kw_only=True):
    key: str
    name: str
    memories: int
    first: datetime
    last: datetime
    aliases: list[str]

    @classmethod
    def of(cls, key: str, name: str, memories: int, first: float, last: float,
           aliases: list[str]) -> EntityRow:
        return cls(key=key, name=name, memories=memories, aliases=aliases,
                   first=datetime.fromtimestamp(first, UTC),
                   last=datetime.fromtimestamp(last, UTC))


class EntitiesResult(msgspec.Struct, kw_only=True):
    entities: list[EntityRow]
    total: int
    # With `name`: that entity's memories over time, and the entities named beside it.
    memories: list[WireMemory] | UnsetType = UNSET
    beside: list[EntityRow] | UnsetType = UNSET


class SmartSearchResult(msgspec.Struct, kw_only=True):
    memories: list[ScoredMemory]
    query: str
    top_k: int


class ChunkMatch(msgspec.Struct, kw_only=True):
    """A long note's chunk that matched: its index, where it lies, its start."""

    index: int
    start: int
    end: int
    text: str


class ExplainedCandidate(msgspec.Struct, kw_only=True):
    id: str
    content: str | None  # its first 200 characters (None: no longer readable)
    kept: bool
    rank: int | None
    reason: str
    scores: dict[str, Any]
    graph: dict[str, Any] | None
    chunk: ChunkMatch | None
    entities: list[str]  # the query's entities it names
    via_entities: list[str]  # entities it shares with the best candidates
    own_words: bool  # a turn of one the query names, saying something of themselves


class ExplainKnobs(msgspec.Struct, kw_only=True):
    recency_weight: float
    importance_weight: float
    score_threshold: float
    mmr_lambda: float
    scopes: list[str] | None


class GraphTopic(msgspec.Struct, kw_only=True):
    node: str
    label: str
    sim: float
    via: str | None


class ExplainResult(msgspec.Struct, kw_only=True):
    query: str
    top_k: int
    mode: str
    searched: int
    reranker: bool
    params: ExplainKnobs
    timings_ms: dict[str, float]
    candidates: list[ExplainedCandidate]
    topics: list[GraphTopic]
    entities: list[str]
    embedded_query: str


class BlockResult(msgspec.Struct, kw_only=True):
    text: str
    total_tokens: int
    budget_used: float


class RecallResult(BlockResult, kw_only=True):
    memories: list[RecalledMemory]
    recent: list[WireMemory]
    summary_included: bool


class ContextResult(BlockResult, kw_only=True):
    memories: list[WireMemory]


class AddResult(msgspec.Struct, kw_only=True):
    path: str  # "llm" or "heuristic": who made the decisions
    facts: list[FactChange]


class HistoryResult(msgspec.Struct, kw_only=True):
    id: str
    versions: list[VersionEntry]
    git: bool


class TrashResult(msgspec.Struct, kw_only=True):
    memories: list[TrashedMemory]
    total: int


class ReasonGroup(msgspec.Struct, kw_only=True):
    reason: str
    count: int
    paths: list[str]  # the first LISTED


class MissingFiles(msgspec.Struct, kw_only=True):
    count: int
    paths: list[str]


class SourceReport(msgspec.Struct, kw_only=True):
    source: str
    path: str
    dry_run: bool
    added: int
    updated: int
    unchanged: int
    links: int
    unresolved_links: int
    skipped: list[ReasonGroup]
    failed: list[ReasonGroup]
    noted: list[ReasonGroup]
    missing: MissingFiles
    redacted: int
    seconds: float

    @classmethod
    def of(cls, r: Report) -> SourceReport:
        return cls(source=r.source, path=r.path, dry_run=r.dry_run, added=r.added,
                   updated=r.updated, unchanged=r.unchanged, links=r.links,
                   unresolved_links=r.unresolved_links, skipped=_grouped(r.skipped),
                   failed=_grouped(r.failed), noted=_grouped(r.noted),
                   missing=MissingFiles(count=len(r.missing), paths=r.missing[:LISTED]),
                   redacted=r.redacted, seconds=round(r.seconds, 3))


def _grouped(items: list[tuple[str, str]]) -> list[ReasonGroup]:
    """[(path, reason)] grouped by reason, the commonest reason first."""
    by_reason: dict[str, list[str]] = {}
    for path, reason in items:
        by_reason.setdefault(reason, []).append(path)
    return [ReasonGroup(reason=r, count=len(p), paths=p[:LISTED])
            for r, p in sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0]))]


class IngestResult(msgspec.Struct, kw_only=True):
    reports: list[SourceReport]
    added: int
    updated: int
    unchanged: int
    dry_run: bool


class ExportResult(msgspec.Struct, kw_only=True):
    lines: list[str]
    next: str | None  # pass as `after` for the next page (None: that was the last)
    total: int | None  # on the first page only


class PurgedFiles(msgspec.Struct, kw_only=True):
    memories: int
    versions: int
    trash: int
    other: int


class PurgeResult(msgspec.Struct, kw_only=True):
    dry_run: bool
    occurrences: int
    files: PurgedFiles
    renamed: list[str]
    refused: list[str]
    graph_labels: int
    git: dict[str, Any] | None
    remaining: list[str]
    push: str | None

    @classmethod
    def of(cls, r: PurgeReport) -> PurgeResult:
        return cls(dry_run=r.dry_run, occurrences=r.occurrences,
                   files=PurgedFiles(memories=r.memories, versions=r.versions, trash=r.trash,
                                     other=r.other),
                   renamed=r.renamed, refused=r.refused, graph_labels=r.graph_labels,
                   git=r.git, remaining=r.remaining, push=r.push)


class SyncResult(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Made from the engine's report of the sync (also its record for status and the
    job's report); a key this does not name fails the conversion, so none is dropped."""

    remote: str
    dry_run: bool | UnsetType = UNSET
    branch: str | UnsetType | None = UNSET  # None: not learned (the remote not reached)
    at: str | UnsetType = UNSET
    attempts: int | UnsetType = UNSET  # fetch-merge-push rounds (the remote moved between)
    came_in: int | UnsetType = UNSET
    paths_in: list[str] | UnsetType = UNSET  # the first of the files that came in
    went_out: int | UnsetType = UNSET
    resolved: list[dict[str, Any]] | UnsetType = UNSET
    needs_you: list[dict[str, Any]] | UnsetType = UNSET
    refused: list[dict[str, Any]] | UnsetType = UNSET
    head: str | UnsetType | None = UNSET
    error: str | UnsetType | None = UNSET
    timings_ms: dict[str, float] | UnsetType = UNSET
    duration_ms: float | UnsetType = UNSET
    # A scheduled sync held back after failures: why, and no more.
    skipped: bool | UnsetType = UNSET
    reason: str | UnsetType = UNSET


RESULTS: dict[str, type] = {
    "memory_write": WriteResult,
    "memory_read": ReadResult,
    "memory_update": UpdateResult,
    "memory_delete": DeleteResult,
    "memory_list": ListResult,
    "memory_search": SearchResult,
    "memory_tag": WireMemory,
    "memory_link": LinkResult,
    "memory_unlink": LinkResult,
    "memory_backlinks": BacklinksResult,
    "memory_upgrade": WireMemory,
    "memory_rename": RenameResult,
    "memory_entities": EntitiesResult,
    "memory_smart_search": SmartSearchResult,
    "memory_explain": ExplainResult,
    "memory_recall": RecallResult,
    "memory_context": ContextResult,
    "memory_remember": Remembered,
    "memory_add": AddResult,
    "memory_history": HistoryResult,
    "memory_restore": RestoreResult,
    "memory_trash": TrashResult,
    "memory_ingest": IngestResult,
    "memory_export": ExportResult,
    "memory_sync": SyncResult,
    "memory_purge": PurgeResult,
    "memory_import": ImportResult,
    "memory_remind": WireMemory,
}
