"""Logseq graphs: `pages/` and `journals/` (Markdown and org). A journal's file name
is its date (`created_at`); `key:: value` page properties give tags and aliases
(`title::` the page's name); [[page]] and #tag references become links and tags.
The block outline is kept as it is: it is already Markdown."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import unquote

from memoryd.ingest import markup, walk
from memoryd.ingest.document import Document, Scan

FOLDERS = ("pages", "journals")
_PROPERTY = re.compile(r"^([A-Za-z][\w-]*)::[ \t]*(.*)$")
_ORG_PROPERTY = re.compile(r"^#\+([A-Za-z_]+):[ \t]*(.*)$")
_JOURNAL = re.compile(r"^(\d{4})_(\d{2})_(\d{2})$")
_REF = re.compile(r"\[\[([^\[\]]+)\]\]|#\[\[([^\[\]]+)\]\]|#(\S+)")


def read(root: Path) -> Scan:
    scan = Scan()
    if not any((root / f).is_dir() for f in FOLDERS):
        scan.fail(".", "not a Logseq graph: it has neither pages/ nor journals/")
        return scan
    for folder in FOLDERS:
        if not (root / folder).is_dir():
            continue
        for path, data in walk.files(root, scan, _pages(scan), under=folder):
            content = walk.text(path, data, scan)
            if content is not None:
                _page(scan, folder, path, content)
    return scan


def _pages(scan: Scan) -> Callable[[str], bool]:
    def keep(rel: str) -> bool:
        if rel.lower().endswith((".md", ".org")):
            return True
        scan.skip(rel, "not a Markdown or org page")
        return False

    return keep


def _page(scan: Scan, folder: str, path: str, content: str) -> None:
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    props = _properties(content)
    day = _journal_day(scan, path, stem) if folder == "journals" else None
    dates = [day.date().isoformat(), _journal_title(day)] if day else []
    title = _bare(props.get("title", "")) or (dates[1] if day else _page_name(stem))
    names = list(dict.fromkeys([title, stem, _page_name(stem), *dates]))
    body = content.strip()
    if not _meaningful(body):
        scan.skip(path, "empty page")
        return
    tags = [_bare(t) for t in markup.listish(props.get("tags", ""))]
    refs = _refs(body)
    scan.documents.append(Document(
        path=path, content=markup.titled(title, body), names=names,
        aliases=[_bare(a) for a in markup.listish(props.get("alias", ""))],
        tags=markup.valid_tags([*tags, *refs[1]]), links=refs[0],
        soft_links=refs[1] + tags, created_at=day))


def _journal_day(scan: Scan, path: str, stem: str) -> datetime | None:
    """The day a journal's file name stands for; a name like a date that is none
    (`2024_02_30`) makes an undated page, with a note in the report."""
    match = _JOURNAL.match(stem)
    if match is None:
        return None
    try:
        year, month, day = map(int, match.groups())
        return datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        scan.note(path, "the journal's name is not a real date: read as an undated page")
        return None


def _properties(content: str) -> dict[str, str]:
    """The page's properties: `key:: value` (or org `#+key: value`) lines at its top."""
    props: dict[str, str] = {}
    for line in content.splitlines():
        line = line.strip()
        if not line:
            continue
        match = _PROPERTY.match(line) or _ORG_PROPERTY.match(line)
        if not match:
            break
        props.setdefault(match.group(1).lower(), match.group(2).strip())
    return props


def _refs(body: str) -> tuple[list[str], list[str]]:
    """([[page]] references, #tag references), URLs left out."""
    links, tags = [], []
    for m in _REF.finditer(markup.without_code(body)):
        if m.group(1) is not None:
            target = m.group(1).split("][")[0]  # org: [[target][label]]
            if "://" not in target and not target.startswith(("file:", "mailto:")):
                links.append(target.strip())
        else:
            tag = (m.group(2) or m.group(3) or "").rstrip(".,;:!?)")
            if tag and not tag.isdigit() and not tag.startswith(("+", "#")):
                tags.append(tag)
    return list(dict.fromkeys(links)), list(dict.fromkeys(tags))


def _bare(value: str) -> str:
    """A property item without its reference markup: `[[X]]` or `#X` -> `X`."""
    value = value.strip()
    if value.startswith("[[") and value.endswith("]]"):
        value = value[2:-2]
    return value.lstrip("#").strip()


def _page_name(stem: str) -> str:
    """The page a file name stands for: namespaces are `___` (or %2F) in file names."""
    return unquote(stem.replace("___", "/"))


def _journal_title(day: datetime) -> str:
    """Logseq's default journal title: `May 14th, 2020`."""
    n = day.day
    suffix = "th" if 11 <= n <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{day:%b} {n}{suffix}, {day.year}"


def _meaningful(body: str) -> bool:
    """More than empty bullets (a page of properties only still names a class or tag
    that other pages link to)."""
    return any(line.strip().lstrip("-*").strip() for line in body.splitlines())
