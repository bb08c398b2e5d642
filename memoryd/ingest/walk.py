"""Reading a folder that is not ours: no symlink is followed, only regular files are
read, sizes are capped, and every path returned is relative to the folder."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from memoryd.ingest.document import Scan
from memoryd.schema import MAX_SOURCE_PATH, source_path_problem

MAX_FILE = 4 * 1024 * 1024  # bytes read from one file at most
# A coding agent's session transcript holds every tool call's output: a long session
# is tens of megabytes, of which the turns are a small part.
MAX_TRANSCRIPT = 256 * 1024 * 1024
SPARSE_FROM = 1024 * 1024  # a larger file with under an eighth of it on disk is skipped
# Folders that hold tooling, not notes.
SKIP_DIRS = frozenset({".git", ".obsidian", ".trash", ".logseq", "node_modules", ".venv",
                       "__pycache__", "bak", ".recycle"})


def files(root: Path, scan: Scan, keep: Callable[[str], bool] = lambda rel: True,
          skip_dirs: frozenset[str] = SKIP_DIRS, under: str = "", limit: int = MAX_FILE
          ) -> Iterator[tuple[str, bytes]]:
    """(relative path, bytes) of each regular file under `root` (or its folder `under`)
    that `keep` wants, in name order. Symlinks, special files, unreadable and huge
    files, and names no memory can record (not UTF-8, a line break, a path too long)
    are recorded in `scan.skipped` / `scan.failed` instead, one entry each, and the
    walk goes on. `limit`: the bytes read from one file at most."""
    stack = [under]
    while stack:
        rel_dir = stack.pop()
        try:
            with os.scandir(root / rel_dir if rel_dir else root) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            scan.fail(shown(rel_dir or "."), f"cannot list the folder: {exc.strerror or exc}")
            continue
        subdirs = []
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if entry.is_symlink():
                scan.skip(shown(rel), "symlink (not followed)")
                continue
            is_dir = entry.is_dir(follow_symlinks=False)
            if is_dir and (entry.name in skip_dirs or entry.name.startswith(".")):
                continue
            problem = source_path_problem(rel)
            if problem is not None:
                scan.skip(shown(rel), f"{problem}: the folder is not read" if is_dir
                          else problem)
                continue
            if is_dir:
                subdirs.append(rel)
                continue
            if not keep(rel):
                continue
            data = read(root, rel, scan, limit)
            if data is not None:
                yield rel, data
        stack.extend(reversed(subdirs))


def texts(root: Path, scan: Scan, keep: Callable[[str], bool], under: str = "",
          limit: int = MAX_FILE) -> Iterator[tuple[str, str]]:
    """`files`, each as UTF-8 text (`text`); a file that is not is failed, not given."""
    for rel, data in files(root, scan, keep, under=under, limit=limit):
        decoded = text(rel, data, scan)
        if decoded is not None:
            yield rel, decoded


def transcripts(root: Path, holds: Callable[[str], bool], only: str | None,
                each: Callable[[Scan, str, str], None]) -> Scan:
    """`each` (scan, path, text) of the transcripts under `root` (`holds` says which
    files are), or of the one at `only` (relative to `root`; a hook hands its
    session's)."""
    scan = Scan()
    found = (texts(root, scan, holds, limit=MAX_TRANSCRIPT) if only is None else
             texts(root, scan, lambda rel: rel == only, only.rpartition("/")[0],
                   MAX_TRANSCRIPT))
    for rel, text in found:
        each(scan, rel, text)
    return scan


def read(root: Path, rel: str, scan: Scan, limit: int = MAX_FILE) -> bytes | None:
    """The bytes of one regular file (not a symlink, FIFO or device), or None with the
    reason recorded."""
    path = root / rel
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if os.path.islink(path):
            scan.skip(rel, "symlink (not followed)")
        elif exc.errno == 2:
            return None
        else:
            scan.fail(rel, f"cannot open: {exc.strerror or exc}")
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            scan.skip(rel, "not a regular file")
            return None
        if info.st_size > limit:
            scan.skip(rel, f"too large ({info.st_size} bytes; at most {limit} are read)")
            return None
        if info.st_size > SPARSE_FROM and info.st_blocks * 512 < info.st_size // 8:
            # Mostly holes (a file truncated up, not written): no notes or transcript
            # look so, and reading one would hold its whole size in memory for nothing.
            scan.skip(rel, f"a sparse file ({info.st_size} bytes, "
                           f"{info.st_blocks * 512} of them on disk)")
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            if sum(map(len, chunks)) > limit:
                scan.skip(rel, f"too large (over {limit} bytes)")
                return None
        return b"".join(chunks)
    except OSError as exc:
        scan.fail(rel, f"cannot read: {exc.strerror or exc}")
        return None
    finally:
        os.close(fd)


def shown(rel: str) -> str:
    """A path as a report can show it: undecodable bytes as U+FFFD, and no longer than
    a memory's source path may be."""
    text = rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return text if len(text) <= MAX_SOURCE_PATH else text[:MAX_SOURCE_PATH - 1] + "…"


def text(rel: str, data: bytes, scan: Scan) -> str | None:
    """UTF-8 text (a BOM dropped, line ends normalised), or None with the reason."""
    try:
        decoded = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        scan.fail(rel, f"not UTF-8 text (byte {exc.start})")
        return None
    if "\x00" in decoded:
        scan.fail(rel, "binary content (NUL bytes)")
        return None
    return decoded.replace("\r\n", "\n").replace("\r", "\n")
