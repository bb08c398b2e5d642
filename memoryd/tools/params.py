"""Each tool's parameters, one msgspec Struct per tool.

The constraints here are the validation (errors name the field), and
`msgspec.json.schema` turns them into the `inputSchema` of `tools/list`. A read
tool's filter is taken from its params by field name (filters.py, `of`): a params
field named as a Filters field is that filter; one that only reads like it (the
`from`/`to` dates, an `as_of` text) is offered to it as a property.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, ClassVar, Literal

import msgspec
from msgspec import Meta

from memoryd import filters, schema
from memoryd.errors import InvalidParams
from memoryd.ingest.sources import SourceName
from memoryd.retrieval.query import Knobs
from memoryd.schema import (
    Content,
    Id,
    Importance,
    ProjectScope,
    Scope,
    Session,
    Source,
    Tags,
    Title,
)

# The schema's enumerations, with the description a client shows for them.
Category = Annotated[schema.Category, Meta(
    description="Where it belongs (its folder under categories/).")]
Kind = Annotated[schema.Kind, Meta(description="What the memory is.")]
MemoryType = Annotated[schema.MemoryType, Meta(description="The kind of knowledge.")]
Phase = Annotated[schema.Phase, Meta(description="inbox (unsorted) or organized.")]
Role = Annotated[schema.Role, Meta(description="Who said it.")]

Limit = Annotated[int, Meta(ge=1, le=1000, description="At most this many results.")]
Offset = Annotated[int, Meta(ge=0, le=1_000_000_000,
                              description="Skip this many results (paging).")]
Query = Annotated[str, Meta(min_length=1, max_length=4096,
                            description="Words that must all occur (case-insensitive).")]


class Params(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    # The fields that name a memory: a unique prefix of an id is taken for the id.
    id_fields: ClassVar[tuple[str, ...]] = ()


class WriteParams(Params):
    content: Content
    title: Title | None = None
    category: Category | None = None
    tags: Tags = []
    scope: Scope | None = None
    source: Source | None = None
    type: MemoryType | None = None
    importance: Importance | None = None
    session: Session | None = None
    role: Role | None = None
    created_at: Annotated[datetime, Meta(description="When it happened (ISO 8601); "
                                         "default now.")] | None = None


class IdParams(Params):
    id_fields = ("id",)
    id: Id


class ReadParams(IdParams):
    count_access: Annotated[bool, Meta(description="Count this read as an access (decay "
                                       "and upgrade weigh them); false: a person browsing "
                                       "(the web view).")] = True


class UpdateParams(Params):
    id_fields = ("id",)
    id: Id
    content: Content | None = None
    title: Title | None = None
    category: Category | None = None
    tags: Tags | None = None
    type: MemoryType | None = None
    importance: Importance | None = None
    version: Annotated[int, Meta(ge=1, description="Fail with -32002 unless the memory "
                                 "is still at this version.")] | None = None


IncludeCompressed = Annotated[bool, Meta(description="Also turns that a summary already "
                                         "compresses (kept, but out of reads by default).")]


class ListParams(Params):
    phase: Phase | None = None
    category: Category | None = None
    kind: Kind | None = None
    scope: Scope | None = None
    source: Source | None = None
    tags: Tags = []
    include_compressed: IncludeCompressed = False
    order: Annotated[Literal["newest", "oldest", "updated", "accessed"], Meta(
        description="newest (created) first, oldest first, last updated first, or most "
                    "accessed first.")] = "newest"
    replaced: Annotated[bool, Meta(description=(
        "Also the facts the listed ones replaced (superseded: `superseded_at` set), "
        "back along `replaces`, each placed by when it was made (newest or oldest "
        "first): what was true before, on the same page."))] = False
    limit: Limit = 50
    offset: Offset = 0


class EntitiesParams(Params):
    """The entities the memories name, or one entity's memories over time."""

    name: Annotated[str, Meta(min_length=1, max_length=200, description=(
        "An entity's name (any case; a first or last name stands for the longer names "
        "it begins or ends): its memories, oldest first, and the entities named beside "
        "it. Without it: every entity, most often named first."))] | None = None
    scope: Scope | None = None
    limit: Limit = 50
    offset: Offset = 0


class SearchParams(Params):
    query: Query
    tags: Tags = []
    scope: Scope | None = None
    phase: Phase | None = None
    category: Category | None = None
    kind: Kind | None = None
    type: MemoryType | None = None
    session: Session | None = None
    from_: Annotated[date, Meta(description="Created on or after (YYYY-MM-DD).")] | None = (
        msgspec.field(default=None, name="from"))
    to: Annotated[date, Meta(description="Created on or before (YYYY-MM-DD).")] | None = None
    include_compressed: IncludeCompressed = False
    limit: Limit = 20
    offset: Offset = 0

    def __post_init__(self) -> None:
        if self.from_ and self.to and self.from_ > self.to:
            raise InvalidParams("to", f"is before `from` ({self.to} < {self.from_})")
        if not self.query.split():
            raise InvalidParams("query", "has no words to search for")

    @property
    def since(self) -> datetime | None:
        return filters.day_start(self.from_)

    @property
    def until(self) -> datetime | None:
        return filters.day_after(self.to)


class TagParams(Params):
    id_fields = ("id",)
    id: Id
    add: Tags = []
    remove: Tags = []


class LinkParams(Params):
    id_fields = ("source", "target")
    source: Id
    target: Id


class RenameParams(Params):
    id_fields = ("id",)
    id: Id
    title: Title | None = None


class UpgradeParams(Params):
    id_fields = ("id",)
    id: Id
    category: Category | None = None


Weight = Annotated[float, Meta(ge=0.0, le=1.0)]
RecencyWeight = Annotated[Weight, Meta(description="How much newness counts (0-1).")]
ImportanceWeight = Annotated[Weight, Meta(description="How much importance counts (0-1).")]
ScoreThreshold = Annotated[Weight, Meta(description="Drop results whose relevance is "
                                        "below this (0-1).")]
MmrLambda = Annotated[Weight, Meta(description="MMR: 1 ranks by score only, lower values "
                                   "favour variety (0-1).")]
TopK = Annotated[int, Meta(ge=1, le=100, description="How many results.")]


_MOMENT = r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$"
AsOf = Annotated[str, Meta(
    pattern=_MOMENT,
    description="What was known then (a date, the end of that day, or an ISO 8601 "
                "time): memories created by then, facts current then.")]
ReferenceTime = Annotated[str, Meta(
    pattern=_MOMENT,
    description="What a time in the query is read against (a date or an ISO 8601 "
                "time; default: as_of, else now): a replayed conversation's own day.")]


class ReadsAsOf:
    """For params with an `as_of` (held as `when`) and a `reference_time`: checked when
    the call is decoded, offered as epoch seconds (the filter's, the ranking's)."""

    __slots__ = ()
    when: str | None
    reference_time: str | None

    def __post_init__(self) -> None:
        for field, value in (("as_of", self.when), ("reference_time", self.reference_time)):
            try:
                filters.moment(value)
            except ValueError:
                raise InvalidParams(field, f"{value!r} is not a date or an ISO 8601 "
                                    "time") from None

    @property
    def reference(self) -> float | None:
        return filters.moment(self.reference_time)

    @property
    def as_of(self) -> float | None:
        return filters.moment(self.when)  # read when decoded: it reads


Tail = Annotated[int, Meta(ge=0, le=100, description=(
    "The session's last turns shown verbatim under [RECENT] (default recall.tail). 0: "
    "the caller holds the whole conversation (a coding agent's hook), so neither its "
    "turns nor its summary are shown."))]


class SmartSearchParams(Params, ReadsAsOf):
    query: Query
    top_k: Annotated[int, Meta(ge=1, le=100, description="How many results.")] | None = None
    scope: Scope | None = None
    project: ProjectScope | None = None
    category: Category | None = None
    tags: Tags = []
    phase: Phase | None = None
    type: MemoryType | None = None
    kind: Kind | None = None
    session: Session | None = None
    when: AsOf | None = msgspec.field(default=None, name="as_of")
    reference_time: ReferenceTime | None = None
    recency_weight: RecencyWeight | None = None
    importance_weight: ImportanceWeight | None = None
    score_threshold: ScoreThreshold | None = None
    mmr_lambda: MmrLambda | None = None
    include_compressed: IncludeCompressed = False

    @property
    def knobs(self) -> Knobs:
        return Knobs(recency_weight=self.recency_weight,
                     importance_weight=self.importance_weight,
                     score_threshold=self.score_threshold, mmr_lambda=self.mmr_lambda,
                     reference=self.reference)


TokenBudget = Annotated[int, Meta(ge=16, le=200_000, description="Tokens (embedder's "
                                   "tokenizer) the <memory> block may use (default "
                                   "recall.token_budget).")]


class RecallParams(Params, ReadsAsOf):
    query: Query
    session: Session | None = None
    scope: Scope | None = None
    project: ProjectScope | None = None
    token_budget: TokenBudget | None = None
    top_k: TopK | None = None
    kind: Kind | None = None
    when: AsOf | None = msgspec.field(default=None, name="as_of")
    reference_time: ReferenceTime | None = None
    tail: Tail | None = None
    recency_weight: RecencyWeight | None = None
    score_threshold: ScoreThreshold | None = None
    include_compressed: IncludeCompressed = False
    procedural: Annotated[bool, Meta(description="Procedural memories first (false: a "
                                     "session that was shown them when it started, "
                                     "memory_context).")] = True

    @property
    def knobs(self) -> Knobs:
        return Knobs(recency_weight=self.recency_weight,
                     score_threshold=self.score_threshold, reference=self.reference)


class ContextParams(Params):
    scope: Scope | None = None
    project: ProjectScope | None = None
    token_budget: TokenBudget | None = None
    recent: Annotated[int, Meta(ge=0, le=50, description="Newest facts and decisions of "
                                "each scope (default 8).")] = 8


class RememberParams(Params):
    session: Session
    role: Role
    content: Content
    scope: Scope | None = None
    timestamp: Annotated[datetime, Meta(description="When it was said (ISO 8601); "
                                        "default now.")] | None = None


class AddParams(Params):
    text: Content
    session: Session | None = None
    scope: Scope | None = None


class RemindParams(Params):
    content: Content
    due_at: Annotated[datetime, Meta(description="When (ISO 8601).")] | None = None
    when: Annotated[str, Meta(max_length=200, description="When, in words: 'tomorrow at "
                              "9', 'next Friday 3pm', 'in 2 hours', '明天下午三点'.")] | None = None
    scope: Scope | None = None
    tags: Tags = []


class IngestParams(Params):
    source: Annotated[SourceName | Literal["all"], Meta(
        description="Where the notes come from; `all`: every source with a folder.")]
    path: Annotated[str, Meta(min_length=1, max_length=4096, description="The folder to "
                              "read (absolute); default: ingest.paths or the source's "
                              "own folder. For a transcript source (claude-code, codex, "
                              "gemini), one session's file: only it is read.")] | None = None
    dry_run: Annotated[bool, Meta(description="Report what would change; change "
                                  "nothing.")] = False
    scope: Scope | None = None


class ExportParams(Params):
    after: Annotated[str, Meta(max_length=128, description="The last id of the previous "
                               "page (its `next`); omit for the first page.")] = ""
    limit: Annotated[int, Meta(ge=1, le=5000, description="Lines per page.")] = 1000
    scope: Scope | None = None
    category: Category | None = None
    kind: Kind | None = None
    include_trash: Annotated[bool, Meta(description="Soft-deleted memories too (lines "
                                        "with `trashed: true`).")] = False


class SyncParams(Params):
    dry_run: Annotated[bool, Meta(description="Fetch and say what the merge would bring "
                                  "in, send and resolve; change nothing here or there.")
                       ] = False


class PurgeParams(Params):
    text: Annotated[str, Meta(min_length=6, max_length=4096, pattern=r"^[^\r\n\x00]+$",
                              description="The string to remove everywhere (one line, "
                              "at least 6 characters).")]
    dry_run: Annotated[bool, Meta(description="Count where it is; change nothing.")] = False


class ImportParams(Params):
    lines: Annotated[list[Annotated[str, Meta(max_length=2 * 1024 * 1024)] | dict[str, Any]],
                     Meta(max_length=5000, description="JSONL lines, one memory each (as "
                          "memory_export gives them): each a string, or the JSON object "
                          "it holds (not escaped a second time, so a line near the "
                          "request limit still fits).")]
    first_line: Annotated[int, Meta(ge=1, description="The line number of lines[0] in "
                                    "its file (for reports).")] = 1
    on_conflict: Annotated[Literal["skip", "replace", "keep-both"], Meta(
        description="A memory whose id exists: keep ours (skip), take the line's "
                    "(replace), or store the line's under a new id (keep-both).")] = "skip"


class RestoreParams(Params):
    id_fields = ("id",)
    id: Id
    version: Annotated[int, Meta(ge=1, description="The version to bring back (as "
                                 "memory_history lists them); none: bring the deleted "
                                 "memory back from the trash.")] | None = None


class TrashParams(Params):
    limit: Limit = 50
    offset: Offset = 0
