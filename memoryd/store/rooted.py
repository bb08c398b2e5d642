"""Files under a root, reached without ever following a link: the byte-level I/O
MarkdownStore (files.py) builds the memory layout on.

Everything under the root may have been put there by hand, so a path is never
handed to the kernel whole: it is checked lexically (relative, no `..`, no empty
parts), then walked one folder at a time from the root with `O_NOFOLLOW`, so no
symbolic link, inside or out of the root, is ever followed. Only regular files
are read (a FIFO would block; opens are non-blocking), and at most `MAX_FILE_BYTES`.
A write is durable before it returns: temp file in the same directory, fsync,
rename, fsync of the directory.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath

from memoryd.schema import MAX_CONTENT
from memoryd.store.frontmatter import MAX_FRONT_MATTER
from memoryd.store.walk import TMP_PREFIX, stamp

# The largest file that can hold a valid memory: the content cap in 4-byte UTF-8,
# the front-matter cap, and the `---` lines.
MAX_FILE_BYTES = 4 * MAX_CONTENT + MAX_FRONT_MATTER + 1024
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class UnsafePath(ValueError):
    """A path that would leave the root, or a file memoryd will not read (a symbolic
    link, a FIFO or device, a folder, or one over the size cap)."""


def check_relpath(relpath: str) -> tuple[str, ...]:
    """The parts of a root-relative POSIX path, or UnsafePath if it could leave the root."""
    if not relpath or "\x00" in relpath or relpath.startswith("/"):
        raise UnsafePath(f"{relpath!r} is not a path relative to the root")
    parts = tuple(relpath.split("/"))
    if any(p in ("", ".", "..") for p in parts):
        raise UnsafePath(f"{relpath!r} has an empty, `.` or `..` part")
    return parts


def _is_link_error(exc: OSError) -> bool:
    return exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK)


_SYNC_WORKERS = 8
_sync_pool: ThreadPoolExecutor | None = None
_sync_pool_lock = threading.Lock()


def _syncs() -> ThreadPoolExecutor:
    """Threads that fsync many files at once (os.fsync releases the GIL)."""
    global _sync_pool
    with _sync_pool_lock:
        if _sync_pool is None:
            _sync_pool = ThreadPoolExecutor(_SYNC_WORKERS, thread_name_prefix="fsync")
        return _sync_pool


def _unsynced_temp(folder: _Dir, parts: tuple[str, ...], data: bytes
                   ) -> tuple[str, int, _Dir]:
    """A fresh temp file in `folder` beside the file `parts` names, holding `data`, not
    yet fsync'd: its relative path, its fd (the caller's to close) and the folder."""
    # Never longer than the name it stands for allows: a 255-byte name (git and ext4
    # take one) with the name in its temp's would not fit the file system's limit.
    tmp = f"{TMP_PREFIX}{os.getpid()}.{os.urandom(8).hex()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600, dir_fd=folder.fd)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=folder.fd)
        raise
    return "/".join((*parts[:-1], tmp)), fd, folder


class _Dir:
    """A folder under the root opened without following links: a file descriptor that
    the `*at` calls below use, so nothing can swap a link in between check and use."""

    def __init__(self, fd: int, held: bool = False) -> None:
        self.fd = fd
        self.held = held  # kept open by `holding_folders`: closed there, not here

    def __enter__(self) -> _Dir:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.held:
            os.close(self.fd)

    def fsync(self) -> None:
        os.fsync(self.fd)


class RootedFiles:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._prefix = os.path.join(os.path.abspath(root), "")  # ends with a separator
        self._held = threading.local()  # this thread's `holding_folders`, if any

    def abspath(self, relpath: str) -> Path:
        check_relpath(relpath)
        return self.root / relpath

    def relpath(self, path: Path | str) -> str:
        """`path` relative to the root, lexically (links are not resolved)."""
        if isinstance(path, str) and path.startswith(self._prefix):
            rel = path[len(self._prefix):]  # the watcher's paths: the root's, joined
            with contextlib.suppress(UnsafePath):
                check_relpath(rel)
                return rel
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(self.root))
        if rel == ".." or rel.startswith("../") or rel == ".":
            raise UnsafePath(f"{path} is not inside the root {self.root}")
        return PurePosixPath(Path(rel)).as_posix()

    # -- walking from the root, one folder at a time --------------------------
    @contextlib.contextmanager
    def holding_folders(self) -> Iterator[None]:
        """Within, each folder this thread opens is opened once and kept open until the
        end: a commit's files share a few folders, and each file's temp, rename and
        checks walked the root to its folder (three opens) up to three times. Only
        around work that removes no folder (a held folder would stay the one opened)."""
        if getattr(self._held, "folders", None) is not None:  # already holding
            yield
            return
        self._held.folders = {}
        try:
            yield
        finally:
            folders, self._held.folders = self._held.folders, None
            for folder in folders.values():
                os.close(folder.fd)

    def _open_dir(self, parts: tuple[str, ...], create: bool = False) -> _Dir:
        """The folder at `parts` below the root, opened without following any link
        (created 0700 with `create`). FileNotFoundError if it is missing, UnsafePath
        if any part of it is a link or not a folder."""
        held: dict[tuple[str, ...], _Dir] | None = getattr(self._held, "folders", None)
        if held is not None and (folder := held.get(parts)) is not None:
            return folder
        folder = self._descend(parts, create)
        if held is not None:
            folder.held = True
            held[parts] = folder
        return folder

    def _descend(self, parts: tuple[str, ...], create: bool) -> _Dir:
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for i, part in enumerate(parts):
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o700, dir_fd=fd)
                try:
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    if _is_link_error(exc):
                        where = "/".join(parts[: i + 1])
                        raise UnsafePath(f"{where} is a symbolic link or not a folder; "
                                         "memoryd does not follow links") from None
                    raise
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return _Dir(fd)

    def _parent(self, relpath: str, create: bool = False) -> tuple[_Dir, str]:
        parts = check_relpath(relpath)
        return self._open_dir(parts[:-1], create), parts[-1]

    # -- I/O ------------------------------------------------------------------
    def read_bytes(self, relpath: str) -> bytes | None:
        """The file's bytes; None if there is no file. UnsafePath for a link, a FIFO or
        another non-regular file, or a file over MAX_FILE_BYTES (none is read)."""
        got = self.read_stamped(relpath)
        return got[0] if got is not None else None

    def read_stamped(self, relpath: str) -> tuple[bytes, str] | None:
        """`read_bytes` and the file's stamp, taken before reading (a change while it
        is read gives the file a newer stamp than the one recorded)."""
        try:
            folder, name = self._parent(relpath)
        except (FileNotFoundError, NotADirectoryError):
            return None
        with folder:
            try:
                fd = os.open(name, _READ_FLAGS, dir_fd=folder.fd)
            except FileNotFoundError:
                return None
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise UnsafePath(f"{relpath} is a symbolic link; memoryd does not "
                                     "follow links") from None
                if exc.errno == errno.EISDIR:
                    raise UnsafePath(f"{relpath} is a folder") from None
                raise
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise UnsafePath(f"{relpath} is not a regular file (a FIFO, socket, device "
                                 "or folder); memoryd reads regular files only")
            if info.st_size > MAX_FILE_BYTES:
                raise UnsafePath(f"{relpath} is {info.st_size} bytes; a memory file holds "
                                 f"at most {MAX_CONTENT} characters ({MAX_FILE_BYTES} bytes)")
            chunks: list[bytes] = []
            size = 0
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_FILE_BYTES:  # it grew while we read
                    raise UnsafePath(f"{relpath} is over {MAX_FILE_BYTES} bytes")
            return b"".join(chunks), stamp(info)
        finally:
            os.close(fd)

    def _lstat(self, relpath: str) -> os.stat_result | None:
        """What is at `relpath` itself (a link is not followed); None if nothing is."""
        try:
            folder, name = self._parent(relpath)
        except FileNotFoundError:
            return None
        with folder:
            try:
                return os.stat(name, dir_fd=folder.fd, follow_symlinks=False)
            except FileNotFoundError:
                return None

    def exists(self, relpath: str) -> bool:
        """A regular file (not a link) is at `relpath`."""
        try:
            info = self._lstat(relpath)
        except (OSError, UnsafePath):
            return False
        return info is not None and stat.S_ISREG(info.st_mode)

    def lexists(self, relpath: str) -> bool:
        """Anything (a file, a link, a folder) is at `relpath`."""
        return self._lstat(relpath) is not None

    def write_temp(self, relpath: str, data: bytes) -> str:
        """Write `data` durably to a fresh temp file beside `relpath`; returns the temp's
        relative path (rename it into place with `replace`)."""
        return self.write_temps([(relpath, data)])[0][0]

    def write_temps(self, items: list[tuple[str, bytes]]) -> list[tuple[str, str]]:
        """`write_temp` for many files at once, with each temp's stamp (a rename keeps
        it): each written, then all fsync'd side by side (the file system commits its
        journal once for many of them; one at a time, each waited for a commit of its
        own). All or none: on a failure the temps made so far are removed."""
        made: list[tuple[str, int, _Dir]] = []  # (temp's relpath, its fd, its folder)
        with self.holding_folders():  # each folder opened once, for all its files
            try:
                for relpath, data in items:
                    parts = check_relpath(relpath)
                    folder = self._open_dir(parts[:-1], create=True)
                    made.append(_unsynced_temp(folder, parts, data))
                fds = [fd for _, fd, _ in made]
                if len(fds) > 1:
                    list(_syncs().map(os.fsync, fds))
                elif fds:
                    os.fsync(fds[0])
                return [(temp, stamp(os.fstat(fd))) for temp, fd, _ in made]
            except BaseException:
                for temp, _, folder in made:
                    with contextlib.suppress(OSError):
                        os.unlink(temp.rsplit("/", 1)[-1], dir_fd=folder.fd)
                raise
            finally:
                for _, fd, _ in made:
                    os.close(fd)

    def write_atomic(self, relpath: str, data: bytes, sync_dir: bool = True) -> None:
        """Durable once this returns (with `sync_dir=False`: once `sync_dirs` ran)."""
        tmp = self.write_temp(relpath, data)
        try:
            self.replace(tmp, relpath, sync=sync_dir)
        except BaseException:
            self.unlink(tmp)
            raise

    def replace(self, src: str, dst: str, sync: bool = True) -> None:
        """Rename `src` to `dst` (both inside the root; `dst`'s folders are created);
        with `sync`, both folders are fsync'd."""
        source, src_name = self._parent(src)
        with source:
            target, dst_name = self._parent(dst, create=True)
            with target:
                os.replace(src_name, dst_name, src_dir_fd=source.fd, dst_dir_fd=target.fd)
                if sync:
                    target.fsync()
                    source.fsync()

    def link(self, src: str, dst: str) -> None:
        """A hard link `dst` to the file at `src` (a backup that costs no data blocks)."""
        source, src_name = self._parent(src)
        with source:
            target, dst_name = self._parent(dst)
            with target:
                os.link(src_name, dst_name, src_dir_fd=source.fd, dst_dir_fd=target.fd,
                        follow_symlinks=False)

    def unlink(self, relpath: str) -> None:
        """Remove the file at `relpath` if it is there (never a folder)."""
        with contextlib.suppress(FileNotFoundError, UnsafePath):
            folder, name = self._parent(relpath)
            with folder, contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=folder.fd)

    def sync_dirs(self, relpaths: Iterable[str]) -> None:
        """fsync each distinct folder of these files once (group commit)."""
        for parts in {check_relpath(p)[:-1] for p in relpaths}:
            with self._open_dir(parts) as folder:
                folder.fsync()
