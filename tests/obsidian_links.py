"""Obsidian's link resolution, as its help documents it, to check a folder of notes the
way Obsidian would open it (a test's resolver, not memoryd's):

- `[[target]]`, `[[target|shown text]]`, `[[target#Heading]]`, `[[target#^block]]`,
  `![[target]]` (an embed); `[[#Heading]]` is the note itself. Links in code are text.
- A target without an extension is a Markdown note (`target.md`).
- Case is ignored. A target is first a path from the vault's root, then from the
  linking note's folder, then the end of a path (`Shop/Payments` is
  `Projects/Shop/Payments.md`); of several notes it may mean, the shortest path.
- A link to a heading resolves when the note has that heading.

Front-matter aliases are not link targets in Obsidian (its completion writes
`[[Note|alias]]`), so an `[[alias]]` resolves only when a note has that name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

_LINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
_CODE = re.compile(r"`[^`\n]*`")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


@dataclass(frozen=True)
class Link:
    raw: str  # as written, brackets included
    target: str  # the note part ("" for the note itself)
    heading: str | None


def links(text: str) -> list[Link]:
    """Every link in a note's text (front matter included, as Obsidian reads links in
    properties), outside code."""
    plain = _CODE.sub(" ", _FENCE.sub(" ", text))
    found = []
    for match in _LINK.finditer(plain):
        inner = match.group(2).split("|", 1)[0]
        target, _, heading = inner.partition("#")
        found.append(Link(match.group(0), target.strip(), heading.strip() or None))
    return found


class Vault:
    """The Markdown notes under a folder, as Obsidian indexes them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.notes = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md")
                            if not any(part.startswith(".") for part in
                                       p.relative_to(root).parts))
        self._folded = {n.casefold(): n for n in self.notes}

    def resolve(self, link: Link, source: str) -> str | None:
        """The note (its path in the vault) a link in `source` opens, or None."""
        if not link.target:
            found: str | None = source
        else:
            target = link.target if PurePosixPath(link.target).suffix == ".md" \
                else f"{link.target}.md"
            key = target.casefold().lstrip("/")
            here = str(PurePosixPath(source).parent / target).casefold()
            found = self._folded.get(key) or self._folded.get(here)
            if found is None:
                ends = [n for n in self.notes
                        if n.casefold() == key or n.casefold().endswith("/" + key)]
                found = min(ends, key=lambda n: (len(n), n)) if ends else None
        if found is None or link.heading is None or link.heading.startswith("^"):
            return found
        text = (self.root / found).read_text(encoding="utf-8")
        headings = {h.casefold() for h in _HEADING.findall(text)}
        return found if link.heading.casefold() in headings else None
