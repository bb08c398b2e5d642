"""FileSync: the indexes brought in step with the files.

Hand edits reach the indexes through `sync_paths`, which compares each file's sha256
with the catalog's record; start-up reconciles every file, then the vectors in bulk,
then the topic graph. A file with partial or no front matter is completed and
rewritten. Each file is one commit of a UnitOfWork, so the next file's checks (a
duplicate id, a renamed file) see it, and a file that fails fails alone.

A file memoryd refuses (a link, a FIFO, too large, not UTF-8, front matter that
breaks the schema's rules, a session folder with an invalid name) is left as it is,
dropped from the indexes, and reported: logged once and listed in `stats`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any

import msgspec
import structlog
import trio

from memoryd.config import Config
from memoryd.engine.copies import conflict_copy
from memoryd.engine.links import link_typed
from memoryd.engine.stores import Stores
from memoryd.engine.unit import UnitOfWork
from memoryd.errors import StorageFull
from memoryd.graph import episodes
from memoryd.graph.store import GraphStore
from memoryd.graph.topics import TopicGraph
from memoryd.lang.titles import shortened
from memoryd.rebuild import RebuildProgress
from memoryd.retrieval.snapshots import Snapshots
from memoryd.schema import (
    CATEGORIES,
    INGEST_PREFIX,
    InvalidMemory,
    Memory,
    as_aware,
    content_hash,
    is_valid_id,
    new_id,
    not_utf8,
    utcnow,
    validate,
)
from memoryd.store import frontmatter, names
from memoryd.store.catalog import FileRecord
from memoryd.store.files import (
    HISTORY_DIR,
    INDEXED_DIRS,
    TRASH,
    MarkdownStore,
    UnreadableMemory,
    UnsafePath,
    file_sha,
)
from memoryd.store.walk import ChildWalk, WalkFailed, differences

log = structlog.get_logger("memoryd.engine")

# Keys a file must carry; a file missing any of them is completed and rewritten.
_REQUIRED_KEYS = frozenset({"id", "content_hash", "kind", "phase", "category", "type", "scope",
                            "created_at", "updated_at", "version"})
_EVENT = {"added": "written", "updated": "updated", "deleted": "deleted"}
HISTORY_PREFIX = f"{HISTORY_DIR}/"
TRASHED = f"{TRASH}/"  # files no edit is kept a version of: they are history already
SHOWN_REJECTED = 50  # `stats` lists this many refused files (and counts them all)


class Rejected:
    """Files memoryd refuses to read as memories: path -> why. Each is logged once
    (again if the reason changes) and listed in `stats` until it is fixed or gone."""

    def __init__(self) -> None:
        self._files: dict[str, str] = {}

    def add(self, path: str, reason: str) -> None:
        if self._files.get(path) != reason:
            log.warning("store.rejected_file", path=path, reason=reason)
        self._files[path] = reason

    def clear(self, path: str) -> None:
        self._files.pop(path, None)

    def __len__(self) -> int:
        return len(self._files)

    def describe(self) -> dict[str, Any]:
        files = dict(self._files)  # one C-level copy: the writer thread may be adding
        shown = sorted(files.items())[:SHOWN_REJECTED]
        return {"count": len(files),
                "files": [{"path": p, "reason": r} for p, r in shown]}


class FileSync:
    def __init__(self, stores: Stores, config: Config, graph: TopicGraph,
                 graph_store: GraphStore, snapshots: Snapshots) -> None:
        self.stores = stores
        self.snapshots = snapshots
        self.progress = RebuildProgress()  # of start-up: health, stats, the busy gate
        self.files = stores.files
        self.catalog = stores.catalog
        self.config = config
        self.graph = graph
        self.graph_store = graph_store
        self.rejected = Rejected()
        self._copies_done: list[str] = []  # conflict copies merged in the staged unit

    def _index_file(self, uow: UnitOfWork, path: str, now: datetime, keep: bool = True
                    ) -> tuple[str, str] | None:
        """Stage what brings the index in step with one file; returns what changed and
        the scope of the memory it concerns. `keep`: the text it replaces is kept as a
        version (not after a sync's merge, which brings the versions it made)."""
        if not_utf8(path):  # the catalog, git and every client read names as UTF-8
            # (so none was ever indexed: there is no record to look up)
            return self._reject(uow, path, None, "its name is not UTF-8: rename it to have "
                                                 "it indexed")
        merged = conflict_copy(self.files, self.catalog.writer, uow, path)
        if merged is not None:
            self._copies_done.append(path)
            return merged
        record = self.catalog.writer.record_by_path(path)
        try:
            got = self.files.read_stamped(path)
        except UnsafePath as exc:
            return self._reject(uow, path, record, str(exc))
        except OSError as exc:  # unreadable (permissions)
            return self._reject(uow, path, record, f"cannot be read: {exc.strerror}")
        if got is None:
            self.rejected.clear(path)
            if record is None:
                return None
            uow.unindex(path)
            return "deleted", record.scope
        data, stamp = got
        sha = file_sha(data)
        if record is not None and record.file_sha == sha:
            self.rejected.clear(path)
            if record.stamp != stamp:  # touched or copied back: the same text
                self.catalog.writer.set_stamp(path, stamp)
            return None
        try:
            parsed = frontmatter.parse(data.decode("utf-8"), self.files.id_from_filename(path))
            memory, rewrite = parsed.memory, bool(_REQUIRED_KEYS - parsed.present)
            name = path.rsplit("/", 1)[-1]
            # A file without an id (made in an editor) or with a name memoryd did not
            # give it is titled by its name, as the editor shows it.
            if "title" not in parsed.present and (
                    "id" not in parsed.present or names.given_by_hand(name, memory.id)):
                memory.title = shortened(name.removesuffix(".md")) or memory.title
            rewrite |= self._complete(memory, path, record, now)
            # A hand edit or a sync's file holding a secret is rewritten without it
            # (secrets never stay on disk), and moved if its name held it.
            secret_name = bool(self.stores.redactor.scan(path))
            rewrite |= uow.redact(memory) or secret_name
            validate(memory)  # what the folder says too (a session folder's name)
            if not path.startswith(HISTORY_PREFIX):
                rewrite |= link_typed(uow, memory)
        except UnicodeDecodeError:
            return self._reject(uow, path, record, "is not UTF-8 text")
        except (frontmatter.FrontMatterError, InvalidMemory) as exc:
            if path.startswith(HISTORY_PREFIX):  # the trash is not the user's to mend
                return self._forget(uow, path, record)
            return self._reject(uow, path, record, str(exc))
        if path.startswith(HISTORY_PREFIX) and memory.superseded_at is None:
            return self._forget(uow, path, record)  # trash, not history: not indexed
        self.rejected.clear(path)
        if record is not None and record.id != memory.id:
            uow.unindex(path)
        elif keep and record is not None and not path.startswith(TRASHED):
            before = self.catalog.inline.get(record.id)  # the text as it was indexed
            if before is not None and before.content != memory.content:
                uow.keep_version(before, path)
        if secret_name:
            uow.put(memory, uow.place(memory, path, rename=True), origin=path)
        elif rewrite:
            uow.put(memory, path)
        else:
            uow.index(memory, path, sha, stamp)
        return ("updated" if record is not None else "added"), memory.scope

    @staticmethod
    def _forget(uow: UnitOfWork, path: str, record: FileRecord | None
                ) -> tuple[str, str] | None:
        if record is None:
            return None
        uow.unindex(path)
        return "deleted", record.scope

    def _reject(self, uow: UnitOfWork, path: str, record: FileRecord | None,
                reason: str) -> tuple[str, str] | None:
        """Leave the file alone, report it, and stop serving what it held, keeping the
        text it held as a version (an edit saved half-way, then whole, loses nothing)."""
        self.rejected.add(path, reason)
        if record is None:
            return None
        held = self.catalog.inline.get(record.id) if not path.startswith(TRASHED) else None
        if held is not None:
            uow.keep_version(held, path)
        uow.unindex(path)
        return "deleted", record.scope

    def _complete(self, memory: Memory, path: str, record: Any, now: datetime) -> bool:
        """Fill in and correct what a hand-written file lacks; True if anything changed.
        (Fields are only ever reassigned below, so a shallow copy is a fair "before".)"""
        before = msgspec.structs.replace(memory)
        taken = self.catalog.writer.record_by_id(memory.id)
        if taken is not None and taken.path != path and not self.files.exists(taken.path):
            taken = None  # the file was renamed or moved by hand: its id moves with it
        if taken is not None and taken.path != path:  # parse gave a valid id; a copy's is taken
            fallback = self.files.id_from_filename(path)
            other = self.catalog.writer.record_by_id(fallback)
            valid = is_valid_id(fallback) and (other is None or other.path == path)
            memory.id = fallback if valid else new_id()
        for key, value in self.files.layout_facts(path).items():
            setattr(memory, key, value)
        if memory.category not in CATEGORIES:
            memory.category = "inbox"
        if memory.kind == "turn" and memory.type == "semantic":
            memory.type = "episodic"
        memory.created_at = as_aware(memory.created_at)
        memory.updated_at = as_aware(memory.updated_at)
        fresh_hash = content_hash(memory.content)
        if memory.content_hash != fresh_hash:
            if memory.content_hash and record is not None:  # edited by hand
                memory.version += 1
                memory.updated_at = now
            memory.content_hash = fresh_hash
        if memory.phase == "inbox" and memory.expires_at is None and record is None:
            memory.expires_at = now + timedelta(seconds=self.config.storage.inbox_ttl)
        return memory != before

    @staticmethod
    def indexes(path: str) -> bool:
        """Whether a file at `path` is indexed: a memory's folder, or superseded facts
        (trash/versions/ and soft deletes are history, read by id when asked)."""
        return MarkdownStore.is_memory_path(path) or path.startswith(HISTORY_PREFIX)

    def sync_paths_blocking(self, uow: UnitOfWork, paths: Iterable[str],
                            announce: bool = True,
                            progress: RebuildProgress | None = None,
                            keep: bool = True, by: str = "hand edit"
                            ) -> dict[str, list[str]]:
        """Each file in its own commit of `uow`; hand-edit events are raised on it
        (`announce`; not at start-up, before anybody can be subscribed)."""
        now = utcnow()
        changed: dict[str, list[str]] = {"added": [], "updated": [], "deleted": []}
        for path in paths:
            if progress is not None:
                progress.advance()
            try:
                outcome = self._index_file(uow, path, now, keep)
                uow.commit()
                for done in self._copies_done:  # merged and durable: the copy goes
                    self.files.unlink(done)
                self._copies_done.clear()
            except StorageFull as exc:  # retried at the file's next change or start-up
                uow.discard()
                self._copies_done.clear()
                log.error("store.sync_failed", path=path, error=exc.message)
                continue
            except Exception:  # one file never stops the others
                uow.discard()
                self._copies_done.clear()
                log.exception("store.sync_failed", path=path)
                continue
            if outcome is None:
                continue
            what, scope = outcome
            changed[what].append(path)
            if announce:  # to subscribers who may see the memory's scope only
                uow.event(_EVENT[what], scope, path=path, by=by)
        return changed

    def _files_under(self, folders: Iterable[str]) -> list[str]:
        """Files now under these folders, and indexed files that were under them."""
        folders = [f.rstrip("/") for f in folders]
        prefixes = tuple(f"{f}/" for f in folders)
        if not prefixes:
            return []
        on_disk = list(self.files.iter_files(folders))
        indexed = [p for p in self.catalog.writer.all_records() if p.startswith(prefixes)]
        return sorted({*on_disk, *indexed})

    async def sync_paths(self, paths: Iterable[str], folders: Iterable[str] = (),
                         keep: bool = True, by: str = "hand edit",
                         staged: Sequence[Memory] = ()) -> dict[str, list[str]]:
        """Re-read these files and folders (hand edits; `by` a sync's merge) and index
        what changed. `staged`: what the files hold, known already (a merge's): their
        texts are embedded together at once, not one file's at a time."""
        return await self.stores.change(lambda uow: self.sync_paths_blocking(
            uow, [*paths, *self._files_under(folders)], keep=keep, by=by), staged=staged)

    def _reconcile_files(self, uow: UnitOfWork, announce: bool = True,
                         every_file: bool = False,
                         progress: RebuildProgress | None = None,
                         child: ChildWalk | None = None,
                         remove_temps: bool = True) -> dict[str, int]:
        """Make the catalog agree with every file. A file whose stamp (size, mtime,
        inode) is the one recorded when it was indexed is taken as indexed; the others
        (and with `every_file`, all) are read and compared by content hash. The files
        are walked in a child process (`child`, else one started now) while this thread
        reads the catalog's stamps; `remove_temps`: see MarkdownStore.stamped_files."""
        child = child or self.files.walk_in_child(INDEXED_DIRS)
        try:
            known = self.catalog.writer.stamps()
        except BaseException:
            if child is not None:
                child.close()
            raise
        on_disk, stale = self.files.stamped_files(INDEXED_DIRS, child, remove_temps)
        differ, gone = differences(on_disk, known)
        summary = self._read_back(uow, sorted(on_disk if every_file else differ), gone,
                                  announce, progress)
        return summary | {"files": len(on_disk) - len(self.rejected),
                          "stale_temp_files": stale}

    def _read_back(self, uow: UnitOfWork, todo: list[str], gone: list[str],
                   announce: bool = True, progress: RebuildProgress | None = None
                   ) -> dict[str, int]:
        """Read these files again and drop the gone ones: what changed, counted."""
        if progress is not None:
            progress.begin("reading files", len(todo) + len(gone))
        changed = self.sync_paths_blocking(uow, [*todo, *gone], announce, progress)
        return {k: len(v) for k, v in changed.items()} | {
            "rejected": len(self.rejected), "files_read": len(todo)}

    async def catch_up(self) -> dict[str, int]:
        """Once the watcher is up: `reconcile`, its walk and the comparison with the
        catalog's stamps made in a child at the lowest priority (the first queries run
        beside it; compared here, 130,000 stamps held the interpreter lock 0.3-0.6 s),
        then only what differs read. An edit made between start-up's walk and the first
        watch raised no event; a watcher started again after a failure missed what
        changed meanwhile. Temp files are left: one may be a write in flight when the
        walk lists it."""
        child = self.files.walk_in_child(INDEXED_DIRS, background=True,
                                         catalog=self.catalog.path)
        if child is not None:
            await self.stores.workers.read(child.wait)
            try:
                differ, gone = child.differences()
            except (OSError, WalkFailed) as exc:
                log.warning("files.walk_failed", error=str(exc), then="walking in process")
            else:
                return await self.stores.change(
                    lambda uow: self._read_back(uow, sorted(differ), gone))
        return await self.stores.change(
            lambda uow: self._reconcile_files(uow, remove_temps=False))

    async def sweep_trash_temps(self, before: float) -> int:
        """The temp files a killed daemon left under trash/ (its kept versions), gone,
        after start-up: a walk of the whole trash, on a thread of its own so no read
        waits behind it (it touches no file an index holds)."""
        removed = await trio.to_thread.run_sync(self.files.remove_stale_temps, TRASH,
                                                before)
        if removed:
            log.info("files.stale_temps_removed", folder=TRASH, removed=removed)
        return removed

    async def index_health(self) -> dict[str, Any]:
        """Do the derived indexes agree with the files? Memory files (accepted), keyword
        rows and the vectors ranking reads (the corpus's rows and chunks), counted now;
        `in_step`, else `differs` says how. The vector store is not counted: counting
        loads chroma's whole index (200 MB at 100k); each start re-embeds what it
        lacks, and `unpersisted` says how many vectors still wait to be written to it."""
        def run() -> dict[str, Any]:
            on_disk = sum(1 for _ in self.files.iter_files(INDEXED_DIRS))
            files = on_disk - len(self.rejected)
            rows = self.catalog.reader.count_rows()
            vectors = self.stores.hybrid.counts()
            unpersisted = vectors.pop("unpersisted")
            differs = []
            if rows != files:
                differs.append(f"{files} memory files but {rows} keyword rows")
            if vectors["own"] != rows:
                differs.append(f"{rows} keyword rows but {vectors['own']} vectors")
            return {"files": files, "rejected": len(self.rejected), "keyword_rows": rows,
                    "vectors": vectors, "unpersisted": unpersisted, "in_step": not differs,
                    "differs": differs}

        return await self.stores.workers.read(run)

    async def reconcile(self) -> dict[str, int]:
        return await self.stores.change(self._reconcile_files)

    async def startup(self, force_embed: bool = False, abandon_on_cancel: bool = False,
                      walk: ChildWalk | None = None) -> dict[str, int]:
        """Files -> catalog -> vectors -> topic graph: everything derived agrees with the
        files. `walk`: the files' walk, started early (the daemon starts it before its
        imports)."""
        def run(uow: UnitOfWork) -> dict[str, int]:
            # The catalog first: the files whose stamp changed, read one by one. Then
            # the corpus: the snapshot caught up, else the vectors in bulk, reusing every
            # stored vector whose text is unchanged (a catalog rebuild re-embeds nothing).
            ahead = None if force_embed else self.snapshots.read_ahead()
            summary = self._reconcile_files(uow, announce=False, every_file=force_embed,
                                            progress=self.progress, child=walk)
            if not self.catalog.writer.trash_lines_read():
                self.catalog.writer.remember_lines(self._trashed_lines())
            resumed = None if ahead is None else self.snapshots.resume(ahead)
            if resumed is None:
                summary |= self.stores.hybrid.reconcile(
                    self.catalog.writer.all_memories(), force=force_embed, progress=self.progress)
                self.snapshots.save_blocking()
            else:
                summary |= resumed
            self.reconcile_graph_blocking(self.graph)
            summary["episodes"] = len(self.graph.episodes)
            self.progress.finish()  # the tools are served from here on
            return summary

        return await self.stores.change(run, vectors=False, abandon=abandon_on_cancel)

    def _trashed_lines(self) -> Iterator[tuple[str, str]]:
        """(source, source_path) of each ingested turn in the trash (an evicted one): read
        once, when the catalog is made anew, so a transcript's line is still known."""
        for memory_id, rel in self.files.trashed():
            if "/turns/" not in rel:
                continue
            with contextlib.suppress(UnreadableMemory, UnsafePath, ValueError):
                memory = self.files.read_memory(rel, memory_id)
                if memory.source_path is not None and memory.source.startswith(INGEST_PREFIX):
                    yield memory.source, memory.source_path

    def reconcile_graph_blocking(self, graph: TopicGraph) -> dict[str, tuple[str, str]]:
        """Bring `graph` (the live one, or a plan) in step with the turn files; the live
        one is saved. Returns turn id -> (episode, topic) where a file lacks its topic."""
        writer = self.catalog.writer
        missing = episodes.reconcile(graph, writer.episode_turns(), writer.load,
                                     self.stores.hybrid.embedder.embed)
        if graph is self.graph:
            graph.save(self.graph_store, utcnow().timestamp())
        return missing

    async def reconcile_graph(self, graph: TopicGraph) -> dict[str, tuple[str, str]]:
        return await self.stores.workers.write(self.reconcile_graph_blocking, graph)
