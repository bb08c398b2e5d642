"""The walk over the memory folders, and the stamp of each file it finds.

Start-up compares every file's stamp (size, mtime, inode) with the one recorded when
it was indexed: one `lstat` a file. At 130,000 files the walk takes about a second
(0.7 s of it the interpreter's own work on each entry, 0.3 s the system calls), and in
the daemon it would take turns on the interpreter lock with the threads that read the
snapshot and the catalog's stamps. So the daemon runs it in a child process
(`ChildWalk`), started before its own imports: the walk runs on the other core while
the daemon loads, and its answer is one block of bytes.

This module imports only the standard library: the child runs this file as a script
(`python -I -S walk.py`), without the site's packages or memoryd's. Nothing here
follows a symbolic link or opens a file; the child does not change anything.
"""

from __future__ import annotations

import importlib.util
import os
import stat
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

TMP_PREFIX = ".tmp-"
WATCHED_DIRS = ("categories", "sessions")
# Superseded facts stay indexed as history (memory_history, `as_of`) from the trash.
HISTORY_DIR = "trash/categories"
INDEXED_DIRS = (*WATCHED_DIRS, HISTORY_DIR)
# The child's answer: fields separated by NUL (no file name holds one), paths in the
# file system's encoding (os.fsencode's, so a name that is not UTF-8 comes back the same).
_END = "end"
_COMPARE = "--compare"  # then the catalog's path: the child answers what differs
_BACKGROUND = 19  # the niceness of a walk run in the background
_FS_CODEC = (sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())


class WalkFailed(RuntimeError):
    """The child walk did not give a whole answer (the caller walks in process)."""


def stamp(info: os.stat_result) -> str:
    """What start-up compares instead of reading a file: size, mtime (ns), inode."""
    return f"{info.st_size}:{info.st_mtime_ns}:{info.st_ino}"


def walk(root: Path, top: str) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """(relpath, entry) of everything below `top`, never entering a linked folder."""
    if os.path.islink(root / top):
        return
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(root / folder) as entries:
                found = list(entries)
        except OSError:
            continue  # gone, or not a folder (a link to one is reported by the caller)
        for entry in sorted(found, key=lambda e: e.name):
            rel = f"{folder}/{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                stack.append(rel)
            yield rel, entry


def memory_entries(root: Path, under: Iterable[str], temps: list[str] | None = None
                   ) -> Iterator[tuple[str, os.DirEntry[str] | None]]:
    """(relpath, entry) of every memory file below these folders (None: a linked top
    folder). Entries that look like one but are not regular files (links, FIFOs) and
    linked folders are yielded too, so the caller reports them; they are never
    followed or read. With `temps`, the temp files met on the way are listed there."""
    for top in under:
        if os.path.islink(root / top):
            yield top, None  # a linked folder: reported, never entered
            continue
        for rel, entry in walk(root, top):
            if entry.name.startswith("."):
                if (temps is not None and entry.name.startswith(TMP_PREFIX)
                        and not entry.is_dir(follow_symlinks=False)):
                    temps.append(rel)
                continue
            if entry.is_dir(follow_symlinks=False):
                continue
            if entry.name.endswith(".md") or entry.is_symlink():
                yield rel, entry


def stamped(root: Path, under: Iterable[str]) -> tuple[dict[str, str | None], list[str]]:
    """Every memory file below these folders with its stamp (None for anything that is
    not a regular file), and the temp files met on the way: one lstat a file."""
    out: dict[str, str | None] = {}
    temps: list[str] = []
    for rel, entry in memory_entries(root, under, temps):
        try:
            info = entry.stat(follow_symlinks=False) if entry is not None else None
        except OSError:
            info = None
        out[rel] = stamp(info) if info is not None and stat.S_ISREG(info.st_mode) else None
    return out, temps


def encode(files: dict[str, str | None], temps: list[str]) -> bytes:
    """How many files, each file's path and stamp ("" for None), how many temps, their
    paths, and the end."""
    fields = [str(len(files))]
    for rel, mark in files.items():
        fields += [rel, mark or ""]
    return "\0".join([*fields, str(len(temps)), *temps, _END]).encode(*_FS_CODEC)


def _decode(data: bytes) -> tuple[dict[str, str | None], list[str]]:
    """An answer of `encode`'s: its files and its list of paths; WalkFailed unless
    it is whole."""
    fields = data.decode(*_FS_CODEC).split("\0")
    count = fields[0]
    if not count.isdigit() or len(fields) < 2 * int(count) + 3:
        raise WalkFailed("the walk's answer is cut short")
    end = 1 + 2 * int(count)
    names, last = fields[end + 1:-1], fields[-1]
    if last != _END or fields[end] != str(len(names)):
        raise WalkFailed("the walk's answer is cut short")
    files = {rel: mark or None
             for rel, mark in zip(fields[1:end:2], fields[2:end:2], strict=True)}
    return files, names


def decode(data: bytes) -> tuple[dict[str, str | None], list[str]]:
    """The child's answer; WalkFailed unless it is whole. The temps it names are
    removed by start-up, so each must be named like one."""
    files, temps = _decode(data)
    if not all(rel.rpartition("/")[2].startswith(TMP_PREFIX) for rel in temps):
        raise WalkFailed("the walk's answer names a temp file that is not one")
    return files, temps


def differences(files: dict[str, str | None], known: Mapping[str, str | None]
                ) -> tuple[dict[str, str | None], list[str]]:
    """The files to read: those whose stamp is not the one `known` records ("" or
    None where none was, which no stamp equals) and those that are not regular files
    (stamp None); and the paths `known` has that are not among `files`. Start-up and
    the catch-up's child both decide by it."""
    differ = {rel: mark for rel, mark in files.items()
              if mark is None or known.get(rel) != mark}
    return differ, [rel for rel in known if rel not in files]


def recorded_stamps(catalog: Path) -> dict[str, str]:
    """What the catalog at `catalog` recorded, read by the catalog's own module (loaded
    by its path here: the child has no memoryd package to import it from)."""
    spec = importlib.util.spec_from_file_location(
        "memoryd_catalog_stamps", Path(__file__).with_name("catalog_stamps.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found: dict[str, str] = module.recorded(catalog)
    return found


class ChildWalk:
    """`stamped` in a child process, started at once; `result()` waits for it. With
    `background`, the child runs at the lowest priority: the walk nobody waits for
    (the watcher's catch-up) takes only CPU the daemon leaves idle."""

    def __init__(self, root: Path, under: Iterable[str], background: bool = False,
                 catalog: Path | None = None) -> None:
        """OSError when no process can be started (an embedded interpreter has no
        `sys.executable`). With `catalog`, the child reads the stamps it recorded and
        answers only what differs (`differences`): comparing 130,000 in the daemon
        held its interpreter lock 0.3-0.6 s beside the first searches."""
        if not sys.executable:
            raise OSError("no Python executable to run the walk with")
        niceness = str(_BACKGROUND if background else 0)
        compare = [] if catalog is None else [_COMPARE, os.fsdecode(catalog)]
        command = [sys.executable, "-I", "-S", __file__, *compare, niceness,
                   os.fsdecode(root), *under]
        self.niceness = int(niceness)  # what the child runs at
        self._proc = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._answer: tuple[bytes, bytes] | None = None  # stdout, stderr once it ended

    @property
    def running(self) -> bool:
        """The child has not ended (nor been stopped by `close`)."""
        return self._proc.poll() is None

    def wait(self) -> tuple[bytes, bytes]:
        """Wait for the child to end: what it wrote (kept for `result`)."""
        if self._answer is None:
            try:
                self._answer = self._proc.communicate()
            finally:
                self.close()
        return self._answer

    def _output(self) -> bytes:
        out, err = self.wait()
        if self._proc.returncode != 0:
            last = err.decode(errors="replace").strip().splitlines()[-1:] or [""]
            raise WalkFailed(f"the walk exited with {self._proc.returncode}: {last[0][:300]}")
        return out

    def result(self) -> tuple[dict[str, str | None], list[str]]:
        return decode(self._output())

    def differences(self) -> tuple[dict[str, str | None], list[str]]:
        """A comparing child's answer: `differences` of its walk and the catalog's
        stamps (read before the walk: a file written between the two differs, and is
        read again to no effect)."""
        return _decode(self._output())

    def close(self) -> None:
        """Stop the child if it still runs (start-up cancelled)."""
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()


def main(argv: list[str]) -> int:
    catalog = argv[1] if argv[:1] == [_COMPARE] else None
    niceness, root, *under = argv[2:] if catalog is not None else argv
    if int(niceness):
        os.nice(int(niceness))
    known = recorded_stamps(Path(catalog)) if catalog is not None else None
    files, temps = stamped(Path(root), under)
    if known is not None:
        files, temps = differences(files, known)  # what differs, and the gone paths
    sys.stdout.buffer.write(encode(files, temps))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
