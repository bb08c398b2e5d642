"""MarkdownStore: where each memory's file lives, and durable writes and moves.

Layout under the root (DESIGN §2):
    categories/<category>/<id>.md
    sessions/<session>/turns/<timestamp>__<id>.md
    trash/<original relative path>
A write is durable before it returns: temp file in the same directory, fsync,
rename, fsync of the directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path, PurePosixPath

from memoryd.schema import CATEGORIES, Memory

TMP_PREFIX = ".tmp-"
WATCHED_DIRS = ("categories", "sessions")


def file_sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class MarkdownStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        for name in (*WATCHED_DIRS, "trash"):
            (root / name).mkdir(mode=0o700, parents=True, exist_ok=True)
        for category in CATEGORIES:  # a person browsing the root sees the whole shape
            (root / "categories" / category).mkdir(mode=0o700, exist_ok=True)

    # -- layout ---------------------------------------------------------------
    def relpath_for(self, memory: Memory) -> str:
        """The path (relative to the root, POSIX style) a memory belongs at."""
        if memory.kind == "turn" and memory.session:
            stamp = memory.created_at.strftime("%Y%m%dT%H%M%S%fZ")
            return f"sessions/{memory.session}/turns/{stamp}__{memory.id}.md"
        return f"categories/{memory.category}/{memory.id}.md"

    def abspath(self, relpath: str) -> Path:
        return self.root / relpath

    def relpath(self, path: Path) -> str:
        return path.resolve().relative_to(self.root.resolve()).as_posix()

    @staticmethod
    def layout_facts(relpath: str) -> dict[str, str]:
        """What the folder says about a file: category, phase, or turn session."""
        parts = PurePosixPath(relpath).parts
        if len(parts) == 3 and parts[0] == "categories":
            category = parts[1]
            return {"category": category, "phase": "inbox" if category == "inbox" else "organized"}
        if len(parts) >= 4 and parts[0] == "sessions" and parts[2] == "turns":
            return {"kind": "turn", "session": parts[1]}
        return {}

    @staticmethod
    def id_from_filename(relpath: str) -> str:
        stem = PurePosixPath(relpath).stem
        return stem.split("__", 1)[1] if "__" in stem else stem

    def iter_files(self, under: Iterable[str] = WATCHED_DIRS) -> Iterator[str]:
        """Every memory file below these folders (relative to the root)."""
        for top in under:
            base = self.root / top
            for dirpath, dirnames, filenames in os.walk(base):
                dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                for name in filenames:
                    if name.endswith(".md") and not name.startswith("."):
                        yield self.relpath(Path(dirpath) / name)

    def remove_stale_temp_files(self) -> int:
        """Temp files a killed daemon left behind (we hold the lock: none is live)."""
        removed = 0
        for top in WATCHED_DIRS:
            for path in (self.root / top).rglob(f"{TMP_PREFIX}*"):
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed += 1
        return removed

    @staticmethod
    def is_memory_path(relpath: str) -> bool:
        parts = PurePosixPath(relpath).parts
        return (
            len(parts) >= 3
            and parts[0] in WATCHED_DIRS
            and parts[-1].endswith(".md")
            and not any(p.startswith(".") for p in parts)
        )

    # -- I/O ------------------------------------------------------------------
    def read_bytes(self, relpath: str) -> bytes | None:
        try:
            return self.abspath(relpath).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def exists(self, relpath: str) -> bool:
        return self.abspath(relpath).is_file()

    def write_atomic(self, relpath: str, data: bytes, sync_dir: bool = True) -> None:
        """Durable once this returns (with `sync_dir=False`: once `sync_dirs` ran)."""
        path = self.abspath(relpath)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.parent / f"{TMP_PREFIX}{path.name}.{os.getpid()}.{os.urandom(4).hex()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        os.close(fd)
        os.replace(tmp, path)
        if sync_dir:
            _fsync_dir(path.parent)

    def sync_dirs(self, relpaths: Iterable[str]) -> None:
        """fsync each distinct folder of these files once (group commit)."""
        for folder in {self.abspath(p).parent for p in relpaths}:
            _fsync_dir(folder)

    def move(self, src: str, dst: str) -> None:
        """Durably move a file inside the root (same filesystem: a rename)."""
        target = self.abspath(dst)
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.replace(self.abspath(src), target)
        _fsync_dir(target.parent)
        _fsync_dir(self.abspath(src).parent)

    def trash_path(self, relpath: str, taken: Collection[str] = ()) -> str:
        """A free path under trash/ for `relpath` (an earlier version may be there, or
        be `taken` by another move of the same change)."""
        candidate = f"trash/{relpath}"
        n = 1
        while candidate in taken or self.abspath(candidate).exists():
            stem = PurePosixPath(relpath)
            candidate = f"trash/{stem.parent}/{stem.stem}.{n}{stem.suffix}"
            n += 1
        return candidate

    def remove_empty_dirs(self, relpath: str) -> None:
        """Tidy session folders left empty by a move (never the top folders)."""
        parent = self.abspath(relpath).parent
        while parent != self.root and parent.parent != self.root:
            try:
                parent.rmdir()
            except OSError:
                return
            parent = parent.parent
