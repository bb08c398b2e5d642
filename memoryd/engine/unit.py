"""UnitOfWork: the one way a change reaches the memories.

A change first stages what it does: memories to write (or move), files to index
as they are (hand edits), memories to trash, paths to unindex. `commit` then
applies what is staged once, in this order:

1. the files, durable: every new text written to a temp file and fsync'd first,
   then the renames (a file overwritten keeps a hard-linked backup until the end),
   then each folder touched fsync'd once (group commit);
2. the catalog, in one transaction;
3. the vectors (one model call for all new texts);
4. the access counts: hits folded into a rewritten file are consumed, a trashed
   memory's are forgotten.

No text is lost to an update: a write whose content differs from the file it loaded
(and a hand edit the watcher indexes, `keep_version`) also writes the version it
replaces under trash/versions/, in the same durable step: the same id, `replaced_by`
its own id, unindexed. memory_history lists them and memory_restore brings them back,
with git or without it, whatever git's timing.

A failure in steps 1-2 (a full disk, most often) undoes every rename in reverse
and removes the temp files, so the files and the catalog are as before and the
client's error is the truth; a full disk is `StorageFull`. The vectors are
derived: a failure there is logged and start-up repairs them.

The events it raised are published by the async caller once the worker thread
returns (events belong to the trio thread). A memory loaded twice in one unit
is the staged one the second time, so a change that rewrites one file twice (a
merge that repoints a peer's links twice) keeps both edits.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import structlog

from memoryd.access_counts import AccessCounts
from memoryd.errors import InvalidFile, InvalidParams, NotFound, StorageFull
from memoryd.lang.titles import titled
from memoryd.retrieval.hybrid import HybridIndex
from memoryd.schema import InvalidMemory, Memory, validate
from memoryd.secrets.fields import scrub_memory
from memoryd.secrets.redact import Redactor
from memoryd.store import frontmatter
from memoryd.store.catalog import Catalog
from memoryd.store.files import MarkdownStore, UnsafePath, check_relpath, file_sha
from memoryd.store.walk import TMP_PREFIX

log = structlog.get_logger("memoryd.engine")
_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}


def disk_full(exc: BaseException) -> bool:
    """ENOSPC / EDQUOT from the files, SQLITE_FULL from the catalog."""
    if isinstance(exc, OSError):
        return exc.errno in _FULL_ERRNOS
    if isinstance(exc, sqlite3.Error):
        return getattr(exc, "sqlite_errorcode", 0) & 0xFF == 13 or "is full" in str(exc)
    return False

Event = tuple[str, dict[str, Any], str | None]  # method, params, scope (None: everyone)


@dataclass
class _Write:
    memory: Memory
    path: str  # where it goes
    origin: str  # where its file is now (the same for a new or unmoved memory)


@dataclass
class _Trash:
    memory: Memory
    path: str
    to: str
    rewrite: bool  # write the staged memory first (replaced_by), then move


class UnitOfWork:
    def __init__(self, files: MarkdownStore, catalog: Catalog, hybrid: HybridIndex,
                 access_counts: AccessCounts, redactor: Redactor, vectors: bool = True,
                 defer_vectors: bool = False) -> None:
        self.files = files
        self.redactor = redactor
        self.catalog = catalog
        self.hybrid = hybrid
        self.access_counts = access_counts
        self.vectors = vectors  # False at start-up: vectors are reconciled in bulk after
        self.defer_vectors = defer_vectors  # see HybridIndex.upsert_many(defer=)
        self.events: list[Event] = []
        self.touched: set[str] = set()  # files its commits changed, moved or indexed
        self.staged: set[str] = set()  # ids whose embedding began when it was queued
        self._reset()

    def discard(self) -> None:
        """Forget what is staged and not yet committed."""
        self._reset()

    def _reset(self) -> None:
        # What load() read of each memory: its content and file bytes, and its path.
        self._originals: dict[str, tuple[str, bytes, str]] = {}
        self._kept: list[tuple[Memory, str]] = []  # replaced versions (keep_version)
        self._writes: dict[str, _Write] = {}
        self._shelved: list[_Write] = []  # written, never indexed (imported soft deletes)
        self._indexed: list[tuple[Memory, str, str, str | None]] = []
        self._trashed: dict[str, _Trash] = {}
        self._unindexed: list[str] = []
        self._folded: dict[str, int] = {}

    # -- staging -------------------------------------------------------------------
    def load(self, memory_id: str) -> tuple[Memory, str]:
        """The memory as its file says now (or as this unit staged it), and its path.
        Access hits still in the buffer are folded in (and consumed on commit)."""
        staged = self._writes.get(memory_id)
        if staged is not None:
            return staged.memory, staged.path
        if memory_id in self._trashed:
            raise NotFound(f"no memory with id {memory_id!r}")
        record = self.catalog.writer.record_by_id(memory_id)
        if record is None:
            raise NotFound(f"no memory with id {memory_id!r}")
        try:
            data = self.files.read_bytes(record.path)
            if data is None:  # deleted by hand a moment ago; the watcher will catch up
                raise NotFound(f"no memory with id {memory_id!r} (its file is gone)")
            memory = frontmatter.parse(data.decode("utf-8"), memory_id).memory
            self._originals.setdefault(memory_id, (memory.content, data, record.path))
        except (UnsafePath, UnicodeDecodeError, frontmatter.FrontMatterError) as exc:
            raise InvalidFile(f"memory {memory_id!r}: its file {record.path} was changed "
                              f"and is refused, so it is left alone: {exc}") from None
        if memory.id != memory_id:
            raise InvalidFile(f"memory {memory_id!r}: its file {record.path} now holds id "
                              f"{memory.id!r}; it is left alone until it is re-indexed")
        pending = self.access_counts.pending(memory_id)
        if pending:
            memory.access_count += pending.count
            # A hit's time: the aware datetime the schema's field holds, typed loosely.
            memory.last_accessed_at = pending.last  # type: ignore[assignment]
            self._folded[memory_id] = pending.count
        return memory, record.path

    def place(self, memory: Memory, current: str | None = None, rename: bool = False) -> str:
        """Where `memory`'s file goes: where it is (`current`, else where this unit
        staged or loaded it), in its category's folder; a new one is named from its
        title, past the names this unit's other writes take; `rename`: named from its
        title again. Secrets are cut from every field first (`redact`): a name is never
        made of one."""
        self.redact(memory)
        titled(memory)
        staged = self._writes.get(memory.id)
        if current is None:
            current = staged.path if staged is not None else (
                self._originals[memory.id][2] if memory.id in self._originals else None)
        taken = {w.path for i, w in self._writes.items() if i != memory.id}
        return self.files.relpath_for(memory, current, taken, rename)

    def put(self, memory: Memory, path: str, origin: str | None = None,
            indexed: bool = True) -> None:
        """Write `memory` durably at `path` (moving its file from `origin`, else from
        where this unit loaded it). The memory must keep the schema's rules, as a file
        read back must. `indexed=False` writes a file no index holds (a soft-deleted
        memory, imported into trash/)."""
        self.redact(memory)
        titled(memory)  # every file says what it is about (lang/titles.py)
        if origin is None and memory.id in self._originals:
            origin = self._originals[memory.id][2]
        try:
            validate(memory)
            frontmatter.check_readable(memory)
        except InvalidMemory as exc:
            raise InvalidParams(exc.field, exc.problem, prefix="memory") from None
        except frontmatter.FrontMatterError as exc:
            raise InvalidParams("extra", str(exc), prefix="memory") from None
        check_relpath(path)
        staged = self._writes.get(memory.id)
        start = staged.origin if staged is not None else origin or path
        if not indexed:
            self._shelved.append(_Write(memory, path, path))
            return
        self._writes[memory.id] = _Write(memory, path, start)

    def redact(self, memory: Memory) -> bool:
        """Cut every secret out of every field of `memory` (secrets/fields.py): the one
        boundary every way in passes, since every write is placed or staged here. True
        if anything was cut."""
        return bool(scrub_memory(self.redactor, memory))

    def keep_version(self, replaced: Memory, path: str) -> None:
        """Keep `replaced`, the version at `path` that this change replaces (a hand edit
        the catalog still holds the old text of), under trash/."""
        self._kept.append((replaced, path))

    def index(self, memory: Memory, path: str, sha: str, stamp: str | None) -> None:
        """The file at `path` is already durable as it is (a hand edit): index it."""
        self._indexed.append((memory, path, sha, stamp))

    def unindex(self, path: str) -> None:
        """The file at `path` is gone, or holds another memory now: drop its entries."""
        self._unindexed.append(path)

    def trash(self, memory: Memory, path: str, rewrite: bool = False) -> str:
        """Move the memory's file under trash/ (rewritten first with `rewrite`);
        returns where it goes."""
        staged = self._writes.pop(memory.id, None)
        origin = staged.origin if staged is not None else path
        taken = {t.to for t in self._trashed.values()}
        to = self.files.trash_path(origin, memory.id, taken)
        self._trashed[memory.id] = _Trash(memory, origin, to, rewrite or staged is not None)
        return to

    def event(self, event: str, scope: str | None, **fields: Any) -> None:
        """A `notifications/memory` for subscribers who may see `scope` (None: all)."""
        self.events.append(("notifications/memory", {"event": event, **fields}, scope))

    def _replaced_versions(self, writes: list[_Write], trashed: list[_Trash]) -> list[_Write]:
        """The versions this change replaces, as writes of unindexed files under trash/:
        each loaded memory whose text changed, and what keep_version named."""
        kept = list(self._kept)
        for w in writes:
            original = self._originals.get(w.memory.id)
            if original is not None and original[0] != w.memory.content:
                _, data, path = original
                kept.append((frontmatter.parse(data.decode("utf-8"), w.memory.id).memory,
                             path))
        taken = {t.to for t in trashed}
        out = []
        for memory, path in kept:
            memory.replaced_by = memory.id  # history, not a soft delete to restore
            to = self.files.version_path(path, memory.id, taken)
            taken.add(to)
            out.append(_Write(memory, to, to))
        return out

    def _link_names(self, memories: list[Memory], staged: dict[str, str]) -> dict[str, str]:
        """The file name (stem) of each memory these link to, where this change puts it
        or where the catalog has it: what their `wikilinks` say (frontmatter.render)."""
        linked = {i for m in memories for i in m.links}
        paths = self.catalog.writer.paths_of(linked - staged.keys())  # one query
        paths.update((i, staged[i]) for i in linked & staged.keys())
        return {i: PurePosixPath(p).stem for i, p in paths.items()}

    # -- applying ------------------------------------------------------------------
    def commit(self) -> None:
        """Apply what is staged: files, catalog, vectors, access counts; once. Files and
        catalog change together or not at all."""
        writes, indexed = list(self._writes.values()), self._indexed
        trashed, unindexed, folded = list(self._trashed.values()), self._unindexed, self._folded
        shelved = [*self._replaced_versions(writes, trashed), *self._shelved]
        self._reset()
        if not (writes or indexed or trashed or unindexed or shelved):
            return
        catalog = self.catalog
        gone: list[Memory] = []
        if self.vectors and unindexed:
            records = [catalog.writer.record_by_path(p) for p in unindexed]
            gone = catalog.writer.load([r.id for r in records if r is not None])
        fresh = [w.memory for w in writes] + [m for m, _, _, _ in indexed]
        if self.vectors and fresh:  # made while the files are (upsert_many waits for them)
            self.hybrid.embed_ahead([m for m in fresh if m.id not in self.staged])
        files = _FileChanges(self.files)
        try:
            # Shelved first: a kept version shares its memory's id, and the sha recorded
            # for that id must be the live file's.
            names = self._link_names([w.memory for w in writes] + [t.memory for t in trashed],
                                     {w.memory.id: w.path for w in writes})
            shas = files.apply([*shelved, *writes], trashed, names)
            with catalog.transaction():
                for t in trashed:
                    catalog.writer.delete(t.memory.id)
                for path in unindexed:
                    catalog.writer.delete_path(path)
                for w in writes:
                    catalog.writer.upsert(w.memory, w.path, *shas[w.memory.id])
                for memory, path, sha, stamp in indexed:
                    catalog.writer.upsert(memory, path, sha, stamp)
        except BaseException as exc:
            files.undo()
            if disk_full(exc):
                raise StorageFull(f"the disk is full ({exc}); nothing of this change was "
                                  "made: free some space and try again") from None
            raise
        files.done()
        self.touched |= files.touched
        self.touched.update(path for _, path, _, _ in indexed)
        self.touched.update(unindexed)
        if self.vectors:
            try:
                for memory in [*gone, *(t.memory for t in trashed)]:
                    self.hybrid.delete(memory.id, memory.scope, catalog.writer.load)
                if fresh:  # their vectors are cached or being made (the embedder waits)
                    self.hybrid.upsert_many(fresh, catalog.writer.load, self.defer_vectors)
            except Exception as exc:  # derived: the change itself is durable and indexed
                self.hybrid.diverged = True  # no snapshot of it: the next start repairs it
                log.error("vectors.update_failed", error=str(exc), disk_full=disk_full(exc),
                          exc_info=not disk_full(exc))
        for w in writes:
            self.access_counts.consumed(w.memory.id, folded.get(w.memory.id, 0))
        for t in trashed:
            self.access_counts.forget(t.memory.id)
            if t.memory.kind == "turn":
                self.files.remove_empty_dirs(t.path)


class _FileChanges:
    """The file half of a commit, undoable until `done`: new texts go to fsync'd temp
    files first (a full disk fails there, before anything changed), then renames, each
    recording its undo; an overwritten file keeps a hard-linked backup."""

    def __init__(self, files: MarkdownStore) -> None:
        self.files = files
        self._undo: list[Callable[[], None]] = []
        self._temps: list[str] = []
        self._backups: list[str] = []
        self.touched: set[str] = set()

    def apply(self, writes: list[_Write], trashed: list[_Trash], names: dict[str, str]
              ) -> dict[str, tuple[str, str]]:
        """Returns each written memory's file sha256 and stamp; `names`: the linked
        memories' file names."""
        with self.files.holding_folders():
            return self._apply(writes, trashed, names)

    def _apply(self, writes: list[_Write], trashed: list[_Trash], names: dict[str, str]
               ) -> dict[str, tuple[str, str]]:
        files = self.files
        shas: dict[str, tuple[str, str]] = {}
        rendered = [(w.origin, frontmatter.render(w.memory, names)) for w in writes]
        rendered += [(t.path, frontmatter.render(t.memory, names)) for t in trashed
                     if t.rewrite]
        temps = self.files.write_temps(rendered)  # all durable, or none made
        self._temps.extend(temp for temp, _ in temps)
        for w, (_, data), (_, stamp) in zip(writes, rendered, temps, strict=False):
            shas[w.memory.id] = (file_sha(data), stamp)
        texts = [(temp, target) for (temp, _), (target, _) in zip(temps, rendered, strict=True)]
        for temp, target in texts:
            self._install(temp, target)
        for w in writes:
            if w.origin != w.path:
                self._rename(w.origin, w.path)
        for t in trashed:
            self._rename(t.path, t.to)
        files.sync_dirs(self.touched)  # durable before the catalog says so
        return shas

    def _install(self, temp: str, target: str) -> None:
        files = self.files
        if files.lexists(target):
            folder = target.rpartition("/")[0]
            backup = f"{folder}/{TMP_PREFIX}bak-{os.urandom(6).hex()}".lstrip("/")
            try:
                files.link(target, backup)
            except OSError as exc:
                if disk_full(exc):
                    raise
                # no hard links here (some FUSE and FAT file systems): keep the bytes
                old = files.read_bytes(target) or b""
                self._undo.append(lambda: files.write_atomic(target, old, sync_dir=False))
            else:
                self._backups.append(backup)
                self._undo.append(lambda: files.replace(backup, target, sync=False))
        else:
            self._undo.append(lambda: files.unlink(target))
        files.replace(temp, target, sync=False)
        self._temps.remove(temp)
        self.touched.add(target)

    def _rename(self, src: str, dst: str) -> None:
        self.files.replace(src, dst, sync=False)
        self._undo.append(lambda: self.files.replace(dst, src, sync=False))
        self.touched.update((src, dst))

    def undo(self) -> None:
        """Put every file back as it was (best effort on a failing disk: renames need
        no space)."""
        for step in reversed(self._undo):
            try:
                step()
            except Exception:
                log.exception("store.undo_failed")
        for temp in [*self._temps, *self._backups]:
            self.files.unlink(temp)
        with contextlib.suppress(Exception):
            self.files.sync_dirs(self.touched)

    def done(self) -> None:
        for backup in self._backups:
            self.files.unlink(backup)
