"""MarkdownStore: its path arithmetic, and the folders a commit holds open."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

import pytest

from memoryd.store.files import MarkdownStore, UnsafePath


def test_relpath_is_lexical_and_refuses_what_is_outside(tmp_path):
    root = tmp_path / "root"
    files = MarkdownStore(root)
    inside = f"{root}/categories/knowledge/a.md"
    assert files.relpath(inside) == "categories/knowledge/a.md"
    assert files.relpath(root / "categories" / "a.md") == "categories/a.md"
    assert files.relpath(f"{root}/categories/../sessions/s/x.md") == "sessions/s/x.md"
    assert files.relpath(f"{root}/categories//a.md") == "categories/a.md"
    for outside in (f"{root}/../elsewhere.md", f"{root}", f"{root}/", f"{root}2/a.md",
                    "/etc/passwd"):
        with pytest.raises(UnsafePath):
            files.relpath(outside)


def test_memory_paths_are_markdown_files_in_the_watched_folders():
    assert MarkdownStore.is_memory_path("categories/knowledge/a.md")
    assert MarkdownStore.is_memory_path("sessions/s/turns/t.md")
    for other in ("categories/a.md.tmp", "categories/.hidden/a.md", "notes/x/a.md",
                  "categories/a", "categories//a.md", "a.md"):
        assert not MarkdownStore.is_memory_path(other), other


def _open_fds(under: Path) -> int:
    """The process's open descriptors of files and folders under `under` (not the
    whole count: another test's socket a worker closes meanwhile would change it)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            count += Path(os.readlink(f"/proc/self/fd/{fd}")).is_relative_to(under)
    return count


def test_folders_held_for_a_commit_are_opened_once_and_closed_after(tmp_path):
    files = MarkdownStore(tmp_path / "root")
    before = _open_fds(tmp_path)
    with files.holding_folders():
        temps = files.write_temps([(f"categories/knowledge/{i}.md", b"x") for i in range(5)])
        opened = _open_fds(tmp_path)
        for (temp, _), i in zip(temps, range(5), strict=True):
            files.replace(temp, f"categories/knowledge/{i}.md", sync=False)
            assert files.lexists(f"categories/knowledge/{i}.md")
        files.replace("categories/knowledge/0.md", "categories/people/0.md", sync=False)
        files.sync_dirs(["categories/knowledge/1.md", "categories/people/0.md"])
        assert _open_fds(tmp_path) == opened + 1, "one more folder held, nothing else left open"
        threads_view: list[bool] = []
        worker = threading.Thread(target=lambda: threads_view.append(
            files.exists("categories/knowledge/1.md")))
        worker.start()
        worker.join()
        assert threads_view == [True], "another thread opens its own folders"
    assert _open_fds(tmp_path) == before
    assert sorted(p.name for p in (tmp_path / "root/categories/knowledge").iterdir()) == [
        "1.md", "2.md", "3.md", "4.md"]
    assert (tmp_path / "root/categories/people/0.md").read_bytes() == b"x"
