"""`memoryd migrate --layout readable`: an existing root's notes renamed from `<id>.md`
to their readable names (`<title slug>-<short id>.md`, store/names.py), with the daemon
stopped.

Each file is renamed on its own, in one rename (what a kill -9 leaves is a root of
renamed and not yet renamed files, both served); a run cut short is finished by running
it again, which passes over what is renamed already. The catalog's paths follow in
batches, so the next start reads no renamed file again (a batch a kill cut off is
caught up by that start: the file's id moves with it). With git history on, the renames
are committed as one commit that git shows as renames. Files named by a person, the
trash (named by id) and the turns (named by time) are left as they are.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.history.git import GIT_ENV
from memoryd.schema import is_valid_id
from memoryd.store.catalog import Catalog
from memoryd.store.files import MarkdownStore, UnreadableMemory

BATCH = 1000  # renames per catalog transaction
CATALOG = Path("index") / "keyword.sqlite"


@dataclass
class Migrated:
    renamed: list[tuple[str, str]] = field(default_factory=list)  # (from, to)
    kept: int = 0  # already readable, or named by a person
    unreadable: list[str] = field(default_factory=list)  # left alone, as the daemon does
    committed: str | None = None  # the git commit of the renames


def migrate(root: Path, dry_run: bool = False,
            progress: Callable[[int], None] = lambda done: None) -> Migrated:
    files = MarkdownStore(root)
    done = Migrated()
    catalog = Catalog(root / CATALOG) if (root / CATALOG).exists() and not dry_run else None
    pending: list[tuple[str, str]] = []
    taken: set[str] = set()  # a dry run's names, as they would be taken
    try:
        for n, rel in enumerate(files.iter_files(["categories"]), 1):
            stem = rel.rsplit("/", 1)[-1].removesuffix(".md")
            if not is_valid_id(stem):
                done.kept += 1
                continue
            try:
                memory = files.read_memory(rel, stem)
            except UnreadableMemory:
                done.unreadable.append(rel)
                continue
            if memory.id != stem:  # readable already (or a person's name like an id)
                done.kept += 1
                continue
            to = files.relpath_for(memory, taken=taken)
            if to == rel:
                done.kept += 1
                continue
            if not dry_run:
                files.replace(rel, to, sync=False)
                pending.append((rel, to))
            taken.add(to)
            done.renamed.append((rel, to))
            if len(pending) >= BATCH:
                _settle(files, catalog, pending)
            if n % BATCH == 0:
                progress(n)
        _settle(files, catalog, pending)
    finally:
        if catalog is not None:
            catalog.close()
    if done.renamed and not dry_run and (root / ".git").is_dir():
        done.committed = _commit(root, len(done.renamed))
    return done


def _settle(files: MarkdownStore, catalog: Catalog | None,
            pending: list[tuple[str, str]]) -> None:
    """The renames made durable (their folders synced), then the catalog told."""
    if not pending:
        return
    files.sync_dirs([to for _, to in pending])
    if catalog is not None:
        with catalog.writer.transaction():
            for old, new in pending:
                catalog.writer.set_path(old, new)
    pending.clear()


def _commit(root: Path, count: int) -> str | None:
    """One commit of the renames (git detects them: the contents are unchanged)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True,
                              text=True, check=True, env={**os.environ, **GIT_ENV}
                              ).stdout.strip()

    try:
        git("add", "-A", "--", "categories")
        git("commit", "-q", "--no-verify", "-m",
            f"memoryd migrate --layout readable: {count} files renamed")
        return git("rev-parse", "HEAD")
    except (OSError, subprocess.CalledProcessError):
        return None  # the daemon's next commit takes them
