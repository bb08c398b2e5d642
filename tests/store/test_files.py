"""MarkdownStore's path arithmetic: what is inside the root, lexically."""

from __future__ import annotations

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
