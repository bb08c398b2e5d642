"""`memoryd rescope FROM TO`: move every memory of one scope to another, in the files
(the truth), with the daemon stopped; its next start reads the changed files into
the indexes. For an agent whose scope changed when names came to map to scopes one
to one (`my agent` is no longer `agent:my-agent`: the daemon logs
`agent.scope_moved` with the command to run), and for merging or renaming scopes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from memoryd.schema import SCOPE_PATTERN, utcnow
from memoryd.store.files import TRASH, MarkdownStore, UnreadableMemory
from memoryd.store.frontmatter import render
from memoryd.store.walk import WATCHED_DIRS


@dataclass
class Rescoped:
    moved: int = 0  # files rewritten, history and trash included
    unreadable: list[str] = field(default_factory=list)  # left alone, as the daemon does


def check_scope(value: str) -> str | None:
    """Why `value` is not a scope, or None."""
    return None if re.match(SCOPE_PATTERN, value) else (
        f"{value!r} is not a scope (global, agent:<name>, user:<name> or project:<name>)")


def rescope(root: Path, old: str, new: str) -> Rescoped:
    """Rewrite each memory file under the root whose scope is `old` with scope `new`
    (version + 1), one atomic write each: a run cut short is finished by running it
    again. Each keeps its `wikilinks` (the linked memories' file names, read first)."""
    files = MarkdownStore(root)
    done = Rescoped()
    now = utcnow()
    names: dict[str, str] = {}  # id -> its live file's name, what `wikilinks` say
    found = []
    for rel in files.iter_files([*WATCHED_DIRS, TRASH]):
        try:
            memory = files.read_memory(rel, files.id_from_filename(rel))
        except UnreadableMemory:
            done.unreadable.append(rel)
            continue
        if not rel.startswith(f"{TRASH}/"):
            names[memory.id] = PurePosixPath(rel).stem
        if memory.scope == old:
            found.append((rel, memory))
    for rel, memory in found:
        memory.scope = new
        memory.version += 1
        memory.updated_at = now
        files.write_atomic(rel, render(memory, names))
        done.moved += 1
    return done
