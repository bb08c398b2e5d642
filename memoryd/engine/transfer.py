"""Transfer: every memory out as JSONL, and back in, losslessly and in pages.

A line is one memory: every front-matter field in the file's key order, then
`content` (and `extra`, a user's own keys, when there are any); a memory whose file
lies under trash/ (a superseded fact, or a soft delete with `include_trash`) also
carries `"trashed": true`. Lines come sorted by id, a page at a time (the caller
passes the last id it got), so 100k memories are never held at once; the lines of
an export imported into an empty root export again byte for byte.

Import takes a page of lines through one unit of work (files, indexes, links,
events); each line is validated exactly as a file's front matter is, and a bad one
is reported with its line number and skipped. A re-run after a kill skips what the
first run stored (`on_conflict: skip`).
"""

from __future__ import annotations

from typing import Literal

import msgspec
import structlog

from memoryd.engine.sessions import foreign_session
from memoryd.engine.stores import Stores
from memoryd.engine.unit import UnitOfWork
from memoryd.errors import InvalidParams, RpcError
from memoryd.filters import Filters
from memoryd.schema import (
    InvalidMemory,
    Memory,
    content_hash,
    field_of,
    new_id,
    utcnow,
    validate,
)
from memoryd.scopes import Caller
from memoryd.secrets.fields import scrub_memory
from memoryd.secrets.redact import Redactor
from memoryd.store.files import TRASH, UnreadableMemory, named_by_id

log = structlog.get_logger("memoryd.transfer")
Conflict = Literal["skip", "replace", "keep-both"]
TRASHED = "trashed"
_encode = msgspec.json.Encoder().encode


class _Flags(msgspec.Struct):
    id: str  # a line without an id is refused before its fields are read
    trashed: bool = False


_decode_flags = msgspec.json.Decoder(_Flags).decode
_decode_memory = msgspec.json.Decoder(Memory).decode


def line_of(memory: Memory, trashed: bool) -> str:
    """The export line of a memory (deterministic: the same memory, the same bytes)."""
    wire = msgspec.to_builtins(memory)
    if not wire.get("extra"):
        wire.pop("extra", None)
    if trashed:
        wire[TRASHED] = True
    return _encode(wire).decode()


class FailedLine(msgspec.Struct, kw_only=True):
    line: int  # its number in the file (first_line counts the first)
    reason: str


class ImportResult(msgspec.Struct, kw_only=True):
    imported: int = 0
    replaced: int = 0
    kept_both: int = 0
    skipped: int = 0
    failed: list[FailedLine] = msgspec.field(default_factory=list)
    redacted: int = 0  # secrets cut out of the lines' contents (secrets/)


class BadLine(ValueError):
    """A JSONL line that is not a valid memory; the message names the field."""

    def __init__(self, field: str | None, problem: str) -> None:
        super().__init__(f"{field}: {problem}" if field else problem)


class Transfer:
    def __init__(self, stores: Stores) -> None:
        self.stores = stores

    # -- export ------------------------------------------------------------------
    async def count(self) -> int:
        """Every memory an export could hold, history included (its `total`)."""
        return await self.stores.workers.read(self.stores.catalog.reader.count_rows)

    async def export_page(self, after: str, limit: int, which: Filters,
                          include_trash: bool = False) -> tuple[list[str], str | None]:
        """Up to `limit` lines of the memories `which` admits with ids after `after`,
        by id; and the id to pass next (None: that was the last page). Everything
        kept is exported, compressed turns too; `include_trash`: history, expired and
        deleted memories too."""
        return await self.stores.workers.read(self._page, after, limit, which,
                                              include_trash)

    def _page(self, after: str, limit: int, which: Filters, include_trash: bool
              ) -> tuple[list[str], str | None]:
        found: list[tuple[str, bool, str]] = []  # (id, trashed, line)
        overlay = self.stores.access_counts.overlay
        cursor, exhausted = after, False
        now = utcnow().timestamp()
        while len(found) < limit:  # filters may drop rows: read on until the page fills
            # With include_trash the walk of trash/ brings the history the catalog holds,
            # and the memories expired but not yet moved there come with the trash.
            rows = self.stores.catalog.reader.export_page(
                cursor, limit, superseded=not include_trash, expired=include_trash,
                now=now)
            for memory_id, path, doc in rows:
                # Hits still buffered count, as in every reply (access_count and its time).
                memory = overlay(msgspec.json.decode(doc, type=Memory))
                if which.admits(memory):
                    trashed = path.startswith("trash/")
                    found.append((memory_id, trashed, line_of(memory, trashed)))
            if len(rows) < limit:
                exhausted = True
                break
            cursor = rows[-1][0]
        if include_trash:
            found += self._trash_after(after, limit, which)
        found.sort(key=lambda item: (item[0], item[1]))
        page = found[:limit]
        more = len(found) > limit or not exhausted
        return [line for _, _, line in page], (page[-1][0] if page and more else None)

    def _trash_after(self, after: str, limit: int, which: Filters
                     ) -> list[tuple[str, bool, str]]:
        """The trash's memories with ids after `after` (at most `limit` + 1)."""
        files = self.stores.files
        named = sorted((i, rel) for i, rel in files.trashed() if i > after)
        out: list[tuple[str, bool, str]] = []
        for memory_id, rel in named:
            if len(out) > limit:
                break
            try:
                memory = files.read_memory(rel, memory_id)
            except UnreadableMemory as exc:
                log.warning("export.trash_unreadable", path=rel, error=str(exc)[:200])
                continue
            if which.admits(memory):
                out.append((memory.id, True, line_of(memory, True)))
        return out

    # -- import ------------------------------------------------------------------
    async def import_lines(self, lines: list[str | bytes], first_line: int,
                           on_conflict: Conflict,
                           caller: Caller) -> ImportResult:
        """Each line stored alone or refused alone: a scope the caller may not write, an
        id held by a memory the caller may not see (neither replaced nor reported as
        there), a session of another scope."""
        result = ImportResult()
        parsed: list[tuple[int, Memory, bool]] = []
        for n, line in enumerate(lines, first_line):
            try:
                memory, trashed, redacted = _parse_line(line, self.stores.redactor)
                result.redacted += redacted
                caller.check(memory.scope)
            except BadLine as exc:
                result.failed.append(FailedLine(line=n, reason=str(exc)))
                continue
            except RpcError as exc:  # a scope this caller may not write
                result.failed.append(FailedLine(line=n, reason=exc.message))
                continue
            parsed.append((n, memory, trashed))
        if parsed:
            await self.stores.change(lambda uow: self._store(uow, parsed, on_conflict, result,
                                                             caller))
        return result

    def _store(self, uow: UnitOfWork, parsed: list[tuple[int, Memory, bool]],
               on_conflict: Conflict, result: ImportResult, caller: Caller) -> None:
        files, catalog = uow.files, uow.catalog
        staged: set[str] = set()
        sessions: dict[str, str] = {}
        for n, memory, trashed in parsed:
            record = catalog.writer.record_by_id(memory.id)
            try:  # a memory held here keeps its file's name; the trash names by id
                live = relpath = uow.place(memory, record.path if record else None)
                trash_rel = f"{TRASH}/{named_by_id(live, memory.id)}"
            except ValueError as exc:  # UnsafePath among them
                result.failed.append(FailedLine(line=n, reason=f"no valid path: {exc}"))
                continue
            if not self._may_take(uow, memory, trash_rel if trashed else None, caller):
                # Whatever the conflict rule: not replaced, and "skipped" would say what
                # is there.
                result.failed.append(FailedLine(line=n, reason=f"id {memory.id!r} cannot be "
                                      "imported by this caller"))
                continue
            refused = None if trashed else foreign_session(catalog, memory.session,
                                                           memory.scope, sessions)
            if refused is not None:
                result.failed.append(FailedLine(line=n, reason=refused.message))
                continue
            if trashed:
                relpath = trash_rel
                exists = files.lexists(relpath) or relpath in staged
                existing_path = relpath if exists else None
            else:
                existing_path = record.path if record is not None else None
                if memory.id in staged:
                    existing_path = live
            if existing_path is not None:
                if on_conflict == "skip":
                    result.skipped += 1
                    continue
                if on_conflict == "keep-both":
                    memory.id = new_id()
                    relpath = uow.place(memory, None)
                    relpath = f"{TRASH}/{named_by_id(relpath, memory.id)}" if trashed else relpath
                    existing_path = None
                    result.kept_both += 1
                else:
                    result.replaced += 1
            else:
                result.imported += 1
            indexed = not trashed or memory.superseded_at is not None
            try:
                uow.put(memory, relpath, origin=existing_path if not trashed else None,
                        indexed=indexed)
            except InvalidParams as exc:
                result.failed.append(FailedLine(line=n, reason=exc.message))
                continue
            staged.add(relpath if trashed else memory.id)
            if indexed and not trashed:
                uow.event("written", memory.scope, id=memory.id, by="import")


    @staticmethod
    def _may_take(uow: UnitOfWork, memory: Memory, trash_path: str | None,
                  caller: Caller) -> bool:
        """Whether what holds this id now (indexed, or the trash file a trashed line
        would replace) is the caller's to see."""
        held = uow.catalog.writer.record_by_id(memory.id)
        if held is not None and not caller.can_see(held.scope):
            return False
        if trash_path is not None and uow.files.lexists(trash_path):
            try:
                return caller.can_see(uow.files.read_memory(trash_path, memory.id).scope)
            except UnreadableMemory:
                return caller.is_user
        return True


def _parse_line(line: str | bytes, redactor: Redactor) -> tuple[Memory, bool, int]:
    """A line as a memory (validated like a file's front matter, every field cleaned
    of secrets as the write will clean it, so an id is looked up as it will be stored),
    its trash flag and how many secrets were cut."""
    try:
        flags = _decode_flags(line)
        memory = _decode_memory(line)
        cut = scrub_memory(redactor, memory)
        if memory.content_hash != content_hash(memory.content):
            memory.content_hash = content_hash(memory.content)
        validate(memory)
    except msgspec.ValidationError as exc:
        raise BadLine(*field_of(exc)) from None
    except (msgspec.DecodeError, RecursionError) as exc:
        raise BadLine(None, f"not a JSON object (one memory per line): {exc}") from None
    except InvalidMemory as exc:
        raise BadLine(exc.field, exc.problem) from None
    trashed = flags.trashed
    if not memory.content.strip():
        raise BadLine("content", "empty: a memory needs its content")
    return memory, trashed, sum(cut.values())
