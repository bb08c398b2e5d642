"""What a source reads: notes, transcript turns, and what it left out and why."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class Document:
    """A note: `path` (within the source folder, `/`-separated) identifies it; `names`
    (its title, file name) and then `aliases` are what [[links]] to it may say (a name
    wins over another note's alias; the aliases are kept in its file, as Obsidian
    reads them); `links` the names it links to."""

    path: str
    content: str
    title: str | None = None  # its own title (a page's name), where the text has none
    names: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    created_at: datetime | None = None
    # Names linked when a note has them (Logseq's #tags and property values); not
    # counted as unresolved when none has.
    soft_links: list[str] = field(default_factory=list)


@dataclass
class Turn:
    """A conversation turn of a transcript; `path` is `<file>#<line id>`."""

    path: str
    session: str
    role: str
    content: str
    created_at: datetime | None = None


@dataclass
class Scan:
    documents: list[Document] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    # Read, but not quite as the source meant: (path, what was done instead)
    noted: list[tuple[str, str]] = field(default_factory=list)

    def skip(self, path: str, reason: str) -> None:
        self.skipped.append((path, reason))

    def fail(self, path: str, reason: str) -> None:
        self.failed.append((path, reason))

    def note(self, path: str, what: str) -> None:
        self.noted.append((path, what))
