"""The memory: one definition of its fields, enums, id rules and content hash.

The same Struct is the YAML front matter on disk (plus the body as `content`)
and the object a tool returns.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, get_args

import msgspec
from msgspec import Meta

Kind = Literal["note", "fact", "turn", "summary", "reminder"]
Phase = Literal["inbox", "organized"]
Category = Literal[
    "soul", "character", "people", "project", "date", "knowledge", "feedback",
    "preferences", "decisions", "lessons", "habits", "skills", "inbox", "reminders",
]
MemoryType = Literal["episodic", "semantic", "procedural", "working"]
Role = Literal["user", "assistant"]

CATEGORIES: tuple[str, ...] = get_args(Category)
KINDS: tuple[str, ...] = get_args(Kind)
TYPES: tuple[str, ...] = get_args(MemoryType)

# An id or a session name becomes part of a path: letters, digits, `.`, `_`, `-`,
# starting with a letter or digit, never `..` anywhere, at most 128 characters (one
# rule, so a tool's params, an imported line and a file's front matter agree).
# `(?!\n)$`: Python's `$` also matches before a final newline; ECMAScript's does not.
ID_PATTERN = r"^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._-]{0,127}(?!\n)$"
SCOPE_PATTERN = r"^(global|(agent|user|project):[A-Za-z0-9][A-Za-z0-9._-]{0,63})(?!\n)$"
# A session names a folder (sessions/<session>/): like an id, plus ':' ("conv-26:3").
SESSION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}(?!\n)$"
_ID_RE = re.compile(ID_PATTERN)

GLOBAL_SCOPE = "global"
MAX_CONTENT = 256 * 1024  # characters
MAX_TAGS = 64
MAX_TAG = 64  # characters, each
MAX_TITLE = 200  # characters
MAX_SOURCE = 128  # characters
MAX_LINKS = 1000

# The field types: the wire params (tools/params.py) and the front matter read from a
# file are validated by these same constraints (one validation path, any origin).
Id = Annotated[str, Meta(pattern=ID_PATTERN, max_length=128, description="A memory id.")]
Content = Annotated[str, Meta(min_length=1, max_length=MAX_CONTENT,
                              description="The text to remember (Markdown).")]
Tag = Annotated[str, Meta(min_length=1, max_length=MAX_TAG, pattern=r"^[^,\r\n]+$")]
Tags = Annotated[list[Tag], Meta(max_length=MAX_TAGS, description="Tags (no commas).")]
Scope = Annotated[str, Meta(pattern=SCOPE_PATTERN,
                            description="global, agent:<name>, user:<name> or "
                            "project:<name>.")]
# A project's scope (coding agents' hooks write there; memoryctl names it from the
# repository): recall from inside the project reads it with `global`.
ProjectScope = Annotated[str, Meta(
    pattern=r"^project:[A-Za-z0-9][A-Za-z0-9._-]{0,63}(?!\n)$",
    description="A project (project:<name>): its memories and the global ones are read.")]
Importance = Annotated[float, Meta(ge=0.0, le=1.0, description="0.0 to 1.0.")]
Title = Annotated[str, Meta(max_length=MAX_TITLE, pattern=r"^[^\r\n\x00]*$",
                            description="A title, one line (default: the first heading "
                            "or line, shortened).")]
Source = Annotated[str, Meta(max_length=MAX_SOURCE,
                             description="Who wrote it (claude, memoryctl...).")]
# The source of a memory ingested from another tool's notes or transcripts: this, then
# the reader's name (`ingest:logseq`).
INGEST_PREFIX = "ingest:"
MAX_SOURCE_PATH = 1024  # characters
# Line breaks and NUL cannot stand in a front-matter line; a lone surrogate (a file
# name that is not UTF-8, as Python reads it) cannot be written at all.
SourcePath = Annotated[str, Meta(min_length=1, max_length=MAX_SOURCE_PATH,
                                 pattern=r"^[^\r\n\x00\ud800-\udfff]+$",
                                 description="Where an ingested memory came from, within "
                                 "its source (a vault-relative path).")]
Session = Annotated[str, Meta(pattern=SESSION_PATTERN, max_length=128,
                              description="Conversation / session id.")]
Links = Annotated[list[Id], Meta(max_length=MAX_LINKS)]
Count = Annotated[int, Meta(ge=0, le=2**62)]
Version = Annotated[int, Meta(ge=1, le=2**62)]
Sha256 = Annotated[str, Meta(pattern=r"^([0-9a-f]{64})?$")]


def is_valid_id(value: str) -> bool:
    return bool(_ID_RE.match(value))


def new_id() -> str:
    return str(uuid.uuid4())


def normalise_content(content: str) -> str:
    return unicodedata.normalize("NFC", content).strip()


def content_hash(content: str) -> str:
    return hashlib.sha256(normalise_content(content).encode("utf-8")).hexdigest()


def clean_tags(tags: list[str]) -> list[str]:
    """Tags stripped, empty ones dropped, duplicates dropped (first one kept)."""
    seen: dict[str, None] = {}
    for tag in tags:
        tag = tag.strip()
        if tag:
            seen.setdefault(tag, None)
    return list(seen)


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_aware(value: datetime) -> datetime:
    """Naive datetimes (hand-written files, clients) are taken as UTC."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


class Memory(msgspec.Struct, kw_only=True):
    """A memory's front matter plus its content. Field order is the file's key order."""

    id: Id
    title: Title = ""  # lang/titles.py: derived when none is given
    content_hash: Sha256 = ""
    kind: Kind = "note"
    phase: Phase = "inbox"
    category: Category = "inbox"
    type: MemoryType = "semantic"
    scope: Scope = GLOBAL_SCOPE
    session: Session | None = None
    role: Role | None = None
    # Turns only, set by the decay-sweep job: the long-term episode (a user turn and
    # its reply) this turn belongs to, and that episode's topic node in the graph.
    episode: Id | None = None
    topic: Id | None = None
    tags: Tags = msgspec.field(default_factory=list)
    source: Source = ""
    # Ingested memories: the file (within the source's folder) they came from; with
    # `source` it identifies the note, so a re-run updates instead of adding.
    source_path: SourcePath | None = None
    importance: Importance = 0.5
    created_at: datetime = msgspec.field(default_factory=utcnow)
    updated_at: datetime = msgspec.field(default_factory=utcnow)
    expires_at: datetime | None = None
    due_at: datetime | None = None
    notified_at: datetime | None = None  # reminders: when the notify job announced it
    access_count: Count = 0
    last_accessed_at: datetime | None = None
    links: Links = msgspec.field(default_factory=list)
    replaces: Links = msgspec.field(default_factory=list)
    replaced_by: Id | None = None
    # Facts: when a newer fact replaced or deleted this one (it then lives in trash/).
    superseded_at: datetime | None = None
    # Facts: the conversation turns they were learned from.
    derived_from: Links = msgspec.field(default_factory=list)
    # Turns from memory_remember: background work (importance, type, facts, summary)
    # still to do. The background worker clears it; a restart finds it again.
    pending: bool = False
    # Compression (the `compress` job): a turn folded into its session's summary memory,
    # and that memory (compression_source, with the session it came from).
    compressed: bool = False
    compression_source: bool = False
    source_session: Session | None = None
    version: Version = 1
    content: Annotated[str, Meta(max_length=MAX_CONTENT)] = ""
    # Front-matter keys a user wrote that we do not know; kept on every rewrite.
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


FRONT_MATTER_FIELDS: tuple[str, ...] = tuple(
    f for f in Memory.__struct_fields__ if f not in ("content", "extra")
)


class InvalidMemory(ValueError):
    """A memory (from a file, or about to be written) breaks the schema's rules."""

    def __init__(self, field: str | None, problem: str) -> None:
        super().__init__(f"{field}: {problem}" if field else problem)
        self.field = field
        self.problem = problem


_FIELD_IN_ERROR = re.compile(r"at `\$\.([A-Za-z_]+)")


def field_of(error: msgspec.ValidationError) -> tuple[str | None, str]:
    """(the field a msgspec error names, the problem without the location)."""
    text = str(error)
    match = _FIELD_IN_ERROR.search(text)
    return (match.group(1) if match else None), text.split(" - at ")[0]


# `extra`, a user's own front-matter keys, is written into the file's front matter: it
# holds plain data of bounded size and depth (the front matter's own bounds), and never
# a key of the memory's own fields, which it would stand in for on the next read.
MAX_EXTRA_BYTES = 48 * 1024  # as JSON; the front matter holds 64 KiB (store/frontmatter.py)
MAX_EXTRA_DEPTH = 32  # the front matter reads 64 levels


def _depth(value: Any, limit: int) -> int:
    """How deeply `value` nests lists and mappings (counting stops past `limit`)."""
    if limit < 0 or not isinstance(value, dict | list):
        return 0
    inner = value.values() if isinstance(value, dict) else value
    return 1 + max((_depth(v, limit - 1) for v in inner), default=0)


def _check_extra(extra: dict[str, Any]) -> None:
    reserved = sorted(set(extra) & set(FRONT_MATTER_FIELDS))
    if reserved:
        raise InvalidMemory("extra", "holds keys of the memory's own fields "
                            f"({', '.join(reserved)}): set those fields themselves")
    if _depth(extra, MAX_EXTRA_DEPTH) > MAX_EXTRA_DEPTH:
        raise InvalidMemory("extra", f"nests deeper than {MAX_EXTRA_DEPTH} levels")
    try:
        size = len(msgspec.json.encode(extra))
    except (TypeError, msgspec.EncodeError) as exc:
        raise InvalidMemory("extra", f"holds what is not plain data: {exc}") from None
    if size > MAX_EXTRA_BYTES:
        raise InvalidMemory("extra", f"is {size} bytes as JSON; at most {MAX_EXTRA_BYTES}")


def validate(memory: Memory) -> None:
    """Raise InvalidMemory unless every field keeps the schema's rules (the same rules
    a file's front matter and a tool's params pass)."""
    if memory.extra:
        _check_extra(memory.extra)
    builtins = msgspec.to_builtins(memory)
    try:
        msgspec.convert(builtins, Memory)
    except msgspec.ValidationError as exc:
        raise InvalidMemory(*field_of(exc)) from None
    try:
        msgspec.json.encode(builtins)
    except UnicodeEncodeError:
        # Text read in-process (a transcript's JSON escapes, a file name) can hold a
        # lone surrogate, which no file or wire could carry.
        bad = next((k for k, v in builtins.items() if not _encodes(v)), None)
        raise InvalidMemory(bad, "holds text that is not valid Unicode (a lone "
                            "surrogate)") from None


def _encodes(value: Any) -> bool:
    try:
        msgspec.json.encode(value)
    except UnicodeEncodeError:
        return False
    return True


def not_utf8(name: str) -> bool:
    """Whether a name read from disk was not UTF-8: Python holds those bytes as lone
    surrogates, which no file, catalog row or wire can carry."""
    return any("\ud800" <= c <= "\udfff" for c in name)


def source_path_problem(path: str) -> str | None:
    """Why `path` cannot be an ingested memory's `source_path` (the SourcePath rules, in
    words a report can show), or None."""
    if not_utf8(path):
        return "the name is not UTF-8"
    if any(c in "\r\n\x00" for c in path):
        return "the name holds a line break or NUL"
    if len(path) > MAX_SOURCE_PATH:
        return f"the path is over {MAX_SOURCE_PATH} characters"
    return None if path else "an empty path"
