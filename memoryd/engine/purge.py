"""Purge: a string (a credential no redaction rule knew) out of everything memoryd keeps.

Every file under the root but the git directory (memories, the versions an update
kept, the trash, a session's summary, pending.md) has the string replaced by
`[PURGED]`, and a file whose name held it is renamed; the indexes are brought in step
with the files and then rewritten without the old rows (the keyword index's deleted
terms and free pages, the topic graph's labels, the vector snapshot); and the git
history is rewritten (history/purge.py). Last, every file under the root is searched
again: what still holds the string is reported, never hidden.

It runs with every writer and the history held, so no write or commit interleaves.
A dry run counts and changes nothing."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from memoryd.engine.stores import Stores
from memoryd.engine.sync import FileSync
from memoryd.errors import InvalidParams
from memoryd.graph.store import GraphStore
from memoryd.graph.topics import TopicGraph
from memoryd.history import purge as git_purge
from memoryd.history.git import GitHistory
from memoryd.history.remote import shown
from memoryd.schema import utcnow
from memoryd.store import frontmatter
from memoryd.store.files import TRASH, VERSIONS, UnsafePath

log = structlog.get_logger("memoryd.purge")

MIN_LENGTH = 6  # shorter strings are words: replacing them everywhere wrecks the notes
MAX_LENGTH = 4096
REPLACEMENT = git_purge.REPLACEMENT.decode()
NAME_REPLACEMENT = git_purge.NAME_REPLACEMENT.decode()
_SKIPPED_TOP = {".git"}  # the history is rewritten, not edited


@dataclass
class PurgeReport:
    dry_run: bool
    occurrences: int = 0
    memories: int = 0  # indexed memory files (live, and facts kept as history)
    versions: int = 0  # versions an update kept (trash/versions)
    trash: int = 0  # other files in the trash
    other: int = 0  # any other file under the root (pending.md, a summary by hand)
    renamed: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # files left as they are (see _files)
    graph_labels: int = 0
    git: dict[str, Any] | None = None
    remaining: list[str] = field(default_factory=list)
    push: str | None = None


class Purge:
    def __init__(self, root: Path, stores: Stores, sync: FileSync, graph: TopicGraph,
                 graph_store: GraphStore, git: GitHistory | None, remote_url: str | None,
                 branch: Callable[[], str]) -> None:
        self.root, self.stores, self.sync = root, stores, sync
        self.graph, self.graph_store, self.git = graph, graph_store, git
        self.remote_url, self.branch = remote_url, branch

    async def run(self, text: str, dry_run: bool = False) -> PurgeReport:
        if len(text.strip()) < MIN_LENGTH or len(text) > MAX_LENGTH:
            raise InvalidParams("text", f"must be {MIN_LENGTH} to {MAX_LENGTH} characters: "
                                "a shorter string is a word of the notes, not a secret")
        if any(c in text for c in "\r\n\x00"):
            raise InvalidParams("text", "must be one line (purge each line alone)")
        needle = text.encode("utf-8")
        report = PurgeReport(dry_run)
        history = self.git.lock if self.git is not None else contextlib.nullcontext()
        async with self.stores.workers.exclusive(), history:
            changed = await self.stores.workers.write(self._files, needle, report)
            if not dry_run:  # the indexes may hold it from before as well
                if changed:
                    await self.sync.sync_paths(changed, keep=False, by="purge")
                await self.stores.workers.write(self._indexes, text)
            if self.git is not None and self.git.enabled:
                if not dry_run:
                    await self.git.commit()
                done = await git_purge.purge_history(self.root, needle, dry_run)
                report.git = {"commits": done.commits, "file_versions": done.blobs,
                              "messages": done.messages, "names": done.paths,
                              "rewritten": bool(not dry_run and (
                                  done.blobs or done.messages or done.paths))}
                if report.git["rewritten"] and self.remote_url:
                    # The address as shown (a password in it is not printed back).
                    report.push = (f"git -C {self.root} push --force "
                                   f"{shown(self.remote_url)} HEAD:refs/heads/{self.branch()}")
        if not dry_run:
            report.remaining = await self.stores.workers.read(self._remaining, needle)
            if self.git is not None and self.git.enabled and needle in await git_purge.objects(
                    self.root):
                report.remaining.append(".git (objects)")
        log.warning("purge.done", dry_run=dry_run, occurrences=report.occurrences,
                    memories=report.memories, versions=report.versions, trash=report.trash,
                    other=report.other, git=report.git, remaining=len(report.remaining))
        return report

    def _walk(self) -> list[str]:
        """Every regular file under the root but the git directory, relative, sorted."""
        out = []
        for top, dirs, names in os.walk(self.root):
            rel_top = os.path.relpath(top, self.root)
            if rel_top == ".":
                dirs[:] = [d for d in dirs if d not in _SKIPPED_TOP]
            for name in names:
                path = Path(top) / name
                if path.is_file() and not path.is_symlink():
                    out.append(os.path.normpath(os.path.join(rel_top, name)))
        return sorted(out)

    def _files(self, needle: bytes, report: PurgeReport) -> list[str]:
        """Each file holding `needle` rewritten without it (renamed if its name held it);
        the indexed ones, for the indexes to follow."""
        files = self.stores.files
        indexed: list[str] = []
        name = needle.decode()
        for rel in self._walk():
            if rel.startswith("index/"):
                continue  # derived: rewritten from the files below (_indexes)
            try:
                data = files.read_bytes(rel)
            except UnsafePath:  # over a memory file's size (a log): searched, not rewritten
                if _holds(self.root / rel, needle):
                    report.refused.append(rel)
                continue
            if data is None:
                continue
            count = data.count(needle)
            named = name in rel.rsplit("/", 1)[-1]
            if not count and not named:
                continue
            report.occurrences += count + named
            is_indexed = FileSync.indexes(rel)
            if is_indexed:
                report.memories += 1
            elif rel.startswith(f"{VERSIONS}/"):
                report.versions += 1
            elif rel.startswith(f"{TRASH}/"):
                report.trash += 1
            else:
                report.other += 1
            if report.dry_run:
                continue
            cleaned = git_purge.replaced(data, needle)
            if rel.endswith(".md") and _readable(data) and not _readable(cleaned):
                # The string spans the front matter's own syntax (`owner: x`): replaced,
                # the file would be refused and its memory dropped. Left for the user.
                report.refused.append(rel)
                continue
            target = rel
            if named:
                folder, _, base = rel.rpartition("/")
                target = f"{folder}/{base.replace(name, NAME_REPLACEMENT)}".lstrip("/")
                report.renamed.append(target)
            files.write_atomic(target, cleaned)
            if target != rel:
                files.unlink(rel)
            if is_indexed:
                indexed += [rel, target] if target != rel else [rel]
        return indexed

    def _indexes(self, text: str) -> None:
        """The derived stores rewritten without the old rows: the catalog compacted, the
        graph's labels, the vector snapshot saved anew."""
        self.graph.replace_text(text, REPLACEMENT)
        self.graph_store.replace_text(text, REPLACEMENT)
        self.graph.save(self.graph_store, utcnow().timestamp())
        self.stores.catalog.compact()
        self.sync.snapshots.save_blocking()

    def _remaining(self, needle: bytes) -> list[str]:
        """Files under the root still holding it, the git directory's plain files too
        (its objects are compressed: git_purge.objects reads those)."""
        out = [rel for rel in self._walk() if _holds(self.root / rel, needle)]
        git_dir = self.root / ".git"
        if git_dir.is_dir():
            out += [str(path.relative_to(self.root)) for path in sorted(git_dir.rglob("*"))
                    if _holds(path, needle)]
        return out


def _readable(data: bytes) -> bool:
    """Whether a memory file's front matter reads (the id is a placeholder)."""
    try:
        frontmatter.parse(data.decode("utf-8"), "x")
    except (UnicodeDecodeError, frontmatter.FrontMatterError, ValueError):
        return False
    return True


def _holds(path: Path, needle: bytes) -> bool:
    """Whether the regular file at `path` holds `needle`, read a megabyte at a time (an
    index, a log: any size); never through a link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        tail = b""
        while chunk := os.read(fd, 1 << 20):
            if needle in tail + chunk:
                return True
            tail = chunk[-(len(needle) - 1):] if len(needle) > 1 else b""
        return False
    finally:
        os.close(fd)
