"""Where a memory's file is: named by its title and id (`ann-smith-0b6c2f3e.md`, see
memoryd/store/names.py), so a test finds it by its id."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memoryd.store.frontmatter import FrontMatterError, parse
from memoryd.store.names import given_by_hand


def file_of(root: Path, memory: dict[str, Any] | str, category: str | None = None
            ) -> Path | None:
    """The file under `root`/categories (one category's folder, or any) that holds
    `memory` (a tool's result or an id); None when there is none."""
    memory_id = memory if isinstance(memory, str) else memory["id"]
    folders = [root / "categories" / category] if category else sorted(
        (root / "categories").iterdir())
    for folder in folders:  # a name memoryd gave first, then any (an ingested page's own,
        # in the folders it had in its vault)
        paths = sorted(folder.rglob("*.md"), key=lambda p: given_by_hand(p.name, memory_id))
        for path in paths:
            try:
                if parse(path.read_text(), path.stem).memory.id == memory_id:
                    return path
            except (FrontMatterError, UnicodeDecodeError):  # a file the test made bad
                continue
    return None


def relpath_of(root: Path, memory: dict[str, Any] | str, category: str | None = None) -> str:
    found = file_of(root, memory, category)
    assert found is not None, f"no file holds {memory if isinstance(memory, str) else memory['id']}"
    return found.relative_to(root).as_posix()
