"""MarkdownStore: where each memory's file lives under the root, what the trash holds,
and the walk over the memory folders; its reads, writes and moves are RootedFiles'
(rooted.py): durable, inside the root, never through a link.

Layout under the root (docs/files.md):
    categories/<category>/<title slug>-<short id>.md   (names.py; an older root: <id>.md)
    sessions/<session>/turns/<timestamp>__<id>.md
    sessions/<session>/summary.md
    trash/<original folder>/<id>.md   (superseded facts there stay indexed as history)
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path, PurePosixPath

import structlog

from memoryd.lang.titles import title_for
from memoryd.schema import CATEGORIES, INGEST_PREFIX, Memory
from memoryd.store import names, walk
from memoryd.store.frontmatter import FrontMatterError, parse
from memoryd.store.rooted import MAX_FILE_BYTES as MAX_FILE_BYTES  # for callers
from memoryd.store.rooted import RootedFiles, UnsafePath, check_relpath
from memoryd.store.walk import HISTORY_DIR as HISTORY_DIR  # the layout, for callers
from memoryd.store.walk import INDEXED_DIRS as INDEXED_DIRS
from memoryd.store.walk import TMP_PREFIX, WATCHED_DIRS

__all__ = ["HISTORY_DIR", "INDEXED_DIRS", "MAX_FILE_BYTES", "MarkdownStore", "UnreadableMemory",
           "UnsafePath", "check_relpath", "file_sha"]

log = structlog.get_logger("memoryd.files")

SUMMARY_FILE = "summary.md"
TRASH = "trash"  # soft deletes, superseded facts (trash/categories: indexed as history)
VERSIONS = f"{TRASH}/versions"  # the versions updates replaced (never walked)


class UnreadableMemory(ValueError):
    """A file that cannot be taken as a memory now (see MarkdownStore.read_memory)."""


def file_sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class MarkdownStore(RootedFiles):
    def __init__(self, root: Path) -> None:
        super().__init__(root)
        for name in (*WATCHED_DIRS, "trash"):
            (root / name).mkdir(mode=0o700, parents=True, exist_ok=True)
        if (root / "categories").is_symlink():  # reported by the first reconcile
            return
        for category in CATEGORIES:  # a person browsing the root sees the whole shape
            (root / "categories" / category).mkdir(mode=0o700, exist_ok=True)

    # -- layout ---------------------------------------------------------------
    def relpath_for(self, memory: Memory, current: str | None = None,
                    taken: Collection[str] = (), rename: bool = False) -> str:
        """The path (relative to the root, POSIX style) a memory belongs at; proven to
        stay inside the root (the id and session are validated, but this is the
        last check before a path is used). A note keeps the file name it has
        (`current`: a category change moves it, a title change does not rename it); a
        new one is named from its title (names.py), a name on disk or `taken` by
        another write of the same change passed over; `rename`: named from its title
        again (its own file's name may be kept)."""
        sub: tuple[str, ...] = ()  # the folders under a category's
        if memory.kind == "turn" and memory.session:
            stamp = memory.created_at.strftime("%Y%m%dT%H%M%S%fZ")
            relpath = f"sessions/{memory.session}/turns/{stamp}__{memory.id}.md"
        elif memory.kind == "summary" and memory.session:
            relpath = f"sessions/{memory.session}/{SUMMARY_FILE}"
        else:
            if current is not None and current.startswith("categories/"):
                # Its folders under the category stay (a vault's `Projects/Shop/`, a
                # folder a person made): a category change moves the whole path.
                sub = PurePosixPath(current).parts[2:-1]
            else:
                sub = subfolders(memory)
            folder = "/".join([f"categories/{memory.category}", *sub])
            if current is not None and current.startswith("categories/") and not rename:
                relpath = f"{folder}/{PurePosixPath(current).name}"
            else:
                relpath = self._named(memory, folder, taken, current)
        parts = check_relpath(relpath)
        # Exactly the folders meant: a name made of an id or a title never adds one.
        if (parts[:-1] != ("categories", memory.category, *sub) if parts[0] == "categories"
                else len(parts) != (3 if parts[-1] == SUMMARY_FILE else 4)):
            raise UnsafePath(f"memory {memory.id!r} would be stored at {relpath!r}")
        return relpath

    def _named(self, memory: Memory, folder: str, taken: Collection[str],
               own: str | None = None) -> str:
        options = [f"{folder}/{name}" for name in
                   names.candidates(memory.title or title_for(memory), memory.id,
                                    named_by_title(memory))]
        for relpath in options:
            if relpath == own or (relpath not in taken and not self.lexists(relpath)):
                return relpath
        return options[-1]  # `<id>.md`: no other memory's file is named by this id

    @staticmethod
    def layout_facts(relpath: str) -> dict[str, str]:
        """What the folder says about a file: category, phase, or turn session."""
        parts = PurePosixPath(relpath).parts
        if len(parts) >= 3 and parts[0] == "categories":
            category = parts[1]
            return {"category": category, "phase": "inbox" if category == "inbox" else "organized"}
        if len(parts) >= 4 and parts[0] == "sessions" and parts[2] == "turns":
            return {"kind": "turn", "session": parts[1]}
        if len(parts) == 3 and parts[0] == "sessions" and parts[2] == SUMMARY_FILE:
            return {"kind": "summary", "session": parts[1], "phase": "organized"}
        return {}

    @staticmethod
    def id_from_filename(relpath: str) -> str:
        stem = PurePosixPath(relpath).stem
        return stem.split("__", 1)[1] if "__" in stem else stem

    def trashed(self) -> Iterator[tuple[str, str]]:
        """(memory id, relpath) of each memory file under trash/, the id read from the
        name: `<id>.md`, `<id>.<n>.md` (an earlier version moved there too, see
        `trash_path`) or `<timestamp>__<id>.md`."""
        for rel in self.iter_files([TRASH]):
            name = rel.rsplit("/", 1)[-1]
            if name.endswith(".md"):
                yield names.id_in_name(name), rel

    def trashed_copies(self, memory_id: str) -> list[tuple[Memory, str]]:
        """The readable files under trash/ that hold `memory_id` (its soft delete, or
        earlier versions moved there), with their paths, in the order `trashed` finds
        them."""
        return self.trashed_of({memory_id})

    def trashed_of(self, memory_ids: Collection[str]) -> list[tuple[Memory, str]]:
        """`trashed_copies` of several memories, in one pass over trash/."""
        copies = []
        for named, rel in self.trashed():
            if named not in memory_ids:
                continue
            try:
                memory = self.read_memory(rel, named)
            except UnreadableMemory:
                continue
            if memory.id == named:
                copies.append((memory, rel))
        return copies

    def read_memory(self, relpath: str, memory_id: str) -> Memory:
        """The memory a file holds (`memory_id` when its front matter names none);
        UnreadableMemory when it is gone, not a regular file, not UTF-8 or refused."""
        try:
            data = self.read_bytes(relpath)
            if data is None:
                raise UnreadableMemory(f"{relpath}: the file is gone")
            return parse(data.decode("utf-8"), memory_id).memory
        except (UnsafePath, UnicodeDecodeError, FrontMatterError) as exc:
            raise UnreadableMemory(f"{relpath}: {exc}") from None

    def iter_files(self, under: Iterable[str] = WATCHED_DIRS) -> Iterator[str]:
        """Every memory file below these folders (relative to the root). Entries that
        look like one but are not regular files (links, FIFOs) and linked folders are
        yielded too, so the caller reports them; they are never followed or read."""
        for rel, _ in walk.memory_entries(self.root, under):
            yield rel

    def walk_in_child(self, under: Iterable[str], background: bool = False,
                      catalog: Path | None = None) -> walk.ChildWalk | None:
        """`stamped_files`' walk, started now in a child process (see store/walk.py;
        `background`: at the lowest priority; `catalog`: compared there with the stamps
        it recorded); None when no process could be started (then it walks in
        process)."""
        try:
            return walk.ChildWalk(self.root, under, background, catalog)
        except OSError as exc:
            log.warning("files.walk_not_started", error=str(exc))
            return None

    def stamped_files(self, under: Iterable[str], child: walk.ChildWalk | None = None,
                      remove_temps: bool = True) -> tuple[dict[str, str | None], int]:
        """`iter_files` with each regular file's stamp (None for anything else): one
        lstat per file, no file opened; `child`'s answer when it has a whole one. With
        `remove_temps` (start-up: we hold the lock and write nothing yet, so none is
        live), the temp files a killed daemon left behind are removed; their number is
        returned too."""
        found = None
        if child is not None:
            try:
                found = child.result()
            except (OSError, walk.WalkFailed) as exc:
                log.warning("files.walk_failed", error=str(exc), then="walking in process")
        files, temps = found or walk.stamped(self.root, under)
        removed = 0
        for rel in temps if remove_temps else ():
            with contextlib.suppress(OSError):
                os.unlink(self.root / rel)
                removed += 1
        return files, removed

    def remove_stale_temps(self, top: str, before: float) -> int:
        """Temp files below `top` last changed before `before` (the daemon's start: a
        killed daemon's, never a write in flight, which is newer) removed; how many.
        Start-up removes those of the indexed folders; this is for the rest of trash/
        (kept versions), which start-up does not walk."""
        removed = 0
        for rel, entry in walk.walk(self.root, top):
            if not entry.name.startswith(TMP_PREFIX):
                continue
            with contextlib.suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(info.st_mode) and info.st_mtime < before:
                    os.unlink(self.root / rel)
                    removed += 1
        return removed

    @staticmethod
    def is_memory_path(relpath: str) -> bool:
        parts = relpath.split("/")
        return (
            len(parts) >= 3
            and parts[0] in WATCHED_DIRS
            and parts[-1].endswith(".md")
            and not any(not p or p.startswith(".") for p in parts)
        )

    def trash_path(self, relpath: str, memory_id: str, taken: Collection[str] = ()) -> str:
        """A free path under trash/ for the file of `memory_id` at `relpath`, named by
        the id (the trash is read by id: `trashed`), in its folder there (an earlier
        version may be there, or be `taken` by another move of the same change)."""
        return self._free(TRASH, named_by_id(relpath, memory_id), taken)

    def version_path(self, relpath: str, memory_id: str, taken: Collection[str] = ()) -> str:
        """A free path under trash/versions/ for a version of the memory at `relpath`
        that an update replaced: in trash/ (history, `trashed` finds it) but out of the
        folders start-up walks, which would read every one of them at every start."""
        return self._free(VERSIONS, named_by_id(relpath, memory_id), taken)

    def _free(self, folder: str, relpath: str, taken: Collection[str]) -> str:
        check_relpath(relpath)
        candidate = f"{folder}/{relpath}"
        n = 1
        while candidate in taken or self.lexists(candidate):
            stem = PurePosixPath(relpath)
            candidate = f"{folder}/{stem.parent}/{stem.stem}.{n}{stem.suffix}"
            n += 1
        return candidate

    def remove_empty_dirs(self, relpath: str) -> None:
        """Tidy session folders left empty by a move (never the top folders)."""
        parts = check_relpath(relpath)[:-1]
        while len(parts) > 1 and parts[0] == "sessions":
            try:
                with self._open_dir(parts[:-1]) as parent:
                    os.rmdir(parts[-1], dir_fd=parent.fd)
            except (OSError, UnsafePath):
                return
            parts = parts[:-1]


def named_by_title(memory: Memory) -> bool:
    """Whether a note's file takes its title itself as its name (`Staging
    environment.md`, where every file system takes it), so that `[[Staging
    environment]]`, as Obsidian completes it, is a link: a note ingested from another
    tool (its own page name), and a note given a title of its own (not the one derived
    from its text). Other memories are `<slug>-<short id>.md`."""
    if memory.kind != "note":
        return False
    return memory.source.startswith(INGEST_PREFIX) or bool(
        memory.title and memory.title != title_for(memory))


MAX_SUBFOLDERS = 8  # folder levels of a source kept under a category (deeper: flattened)


def subfolders(memory: Memory) -> tuple[str, ...]:
    """The folders a new ingested note keeps from its source (`Projects/Shop/` of
    `Projects/Shop/Payments.md`), so that path links (`[[Projects/Shop/Payments]]`)
    resolve in the root as in the vault; each as a file system takes it, else none."""
    if not (memory.kind == "note" and memory.source.startswith(INGEST_PREFIX)
            and memory.source_path):
        return ()
    parts = PurePosixPath(memory.source_path.split("#", 1)[0]).parts[:-1]
    if len(parts) > MAX_SUBFOLDERS or any(
            part.startswith(".") or names.as_named(part) is None for part in parts):
        return ()
    return tuple(parts)


def named_by_id(relpath: str, memory_id: str) -> str:
    """`relpath` with a file name that says its id: a turn's (`<stamp>__<id>.md`) and a
    session summary's are kept, any other is `<id>.md` (a readable name is not)."""
    path = PurePosixPath(relpath)
    if path.name == SUMMARY_FILE or path.stem.endswith(f"__{memory_id}"):
        return relpath
    return str(path.parent / f"{memory_id}.md")
