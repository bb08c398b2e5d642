"""Empty the page cache of some folders' files, as near a reboot as a user can get.

After a reboot nothing of the root or of the installation is in memory, and a start
reads it from the disk; a restart right after a bench finds it all cached. Without
root, /proc/sys/vm/drop_caches is closed, but `posix_fadvise(DONTNEED)` drops a file's
clean pages that no process has mapped (a running process's libraries stay).

    .venv/bin/python bench/pagecache.py ~/.memory     # then time a start
"""

from __future__ import annotations

import os
import stat
import sys
import sysconfig
from collections.abc import Iterable, Iterator
from pathlib import Path


def installation() -> list[Path]:
    """Where the interpreter's standard library and the installed packages live."""
    paths = sysconfig.get_paths()
    return sorted({Path(paths[k]) for k in ("stdlib", "platstdlib", "purelib", "platlib")})


def _files(top: Path) -> Iterator[Path]:
    if top.is_file():
        yield top
        return
    for folder, _, names in os.walk(top):  # symbolic links to folders are not followed
        for name in names:
            yield Path(folder, name)


def evict(tops: Iterable[Path]) -> tuple[int, int]:
    """Drop the cached pages of every regular file under `tops`: (files, bytes)."""
    files = size = 0
    os.sync()  # dirty pages are not dropped: write them out first
    for top in tops:
        for path in _files(top):
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:  # a link, a socket, gone meanwhile
                continue
            try:
                info = os.fstat(fd)
                if info.st_size and stat.S_ISREG(info.st_mode):
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                    files, size = files + 1, size + info.st_size
            finally:
                os.close(fd)
    return files, size


def main() -> None:
    tops = [Path(a) for a in sys.argv[1:]] + installation()
    files, size = evict(tops)
    print(f"dropped the cached pages of {files} files ({size / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
