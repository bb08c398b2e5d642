"""Claude's memory files: `CLAUDE.md` (the user's, `~/.claude/CLAUDE.md`, and every
project's under the path) and the project memories `projects/*/memory/*.md`."""

from __future__ import annotations

from pathlib import Path

from memoryd.ingest import markup, walk
from memoryd.ingest.document import Document, Scan

NAMES = ("CLAUDE.md", "CLAUDE.local.md")


def read(root: Path) -> Scan:
    scan = Scan()

    def keep(rel: str) -> bool:
        parts = rel.split("/")
        return parts[-1] in NAMES or (
            len(parts) == 4 and parts[0] == "projects" and parts[2] == "memory"
            and rel.endswith(".md"))

    for rel, content in walk.texts(root, scan, keep):
        head, body = markup.front_matter(content)
        if not body.strip():
            scan.skip(rel, "empty file")
            continue
        scan.documents.append(Document(
            path=rel, content=markup.titled(_title(rel), body), names=[rel[:-3]],
            tags=markup.valid_tags(["claude", *markup.listish(head.get("tags"))]),
            links=markup.wikilinks(body)))
    return scan


def _title(rel: str) -> str:
    """`CLAUDE.md` (the user's), `myapp/CLAUDE.md`, or a project memory's file name."""
    parts = rel.split("/")
    if parts[-1] in NAMES:
        return rel[:-3] if len(parts) == 1 else f"{'/'.join(parts[:-1])} {parts[-1][:-3]}"
    return f"{parts[1]} memory: {parts[-1][:-3]}"
