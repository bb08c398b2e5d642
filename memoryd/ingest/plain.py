"""Folders of Markdown files: `markdown` (any folder, notes whole), `car-agent`
(every .md, truncated to 5000 characters, as those agents keep them) and `fingersaver`
(chat.md, truncated likewise)."""

from __future__ import annotations

from pathlib import Path

from memoryd.ingest import markup, walk
from memoryd.ingest.document import Document, Scan

TRUNCATE = 5000


def markdown(root: Path) -> Scan:
    return _folder(root, limit=None)


def car_agent(root: Path) -> Scan:
    return _folder(root, limit=TRUNCATE)


def fingersaver(root: Path) -> Scan:
    scan = Scan()
    data = walk.read(root, "chat.md", scan)
    if data is None:
        if not scan.skipped and not scan.failed:
            scan.skip("chat.md", "not found")
        return scan
    _add(scan, "chat.md", data, TRUNCATE)
    return scan


def _folder(root: Path, limit: int | None) -> Scan:
    scan = Scan()

    def keep(rel: str) -> bool:
        if rel.lower().endswith(".md"):
            return True
        scan.skip(rel, "not Markdown")
        return False

    for rel, data in walk.files(root, scan, keep):
        _add(scan, rel, data, limit)
    return scan


def _add(scan: Scan, rel: str, data: bytes, limit: int | None) -> None:
    content = walk.text(rel, data, scan)
    if content is None:
        return
    if not content.strip():
        scan.skip(rel, "empty file")
        return
    head, body = markup.front_matter(content)
    stem = rel.rsplit("/", 1)[-1][:-3]
    # The body as written; the file's name is its title (as an editor shows it), and
    # its file keeps that name and its folders (store/files.py).
    text = body.strip() or content.strip()
    if limit is not None and len(text) > limit:
        text = text[:limit]
    scan.documents.append(Document(
        path=rel, content=text, title=stem, names=[stem, rel[:-3]],
        tags=markup.valid_tags([*markup.listish(head.get("tags")), *markup.inline_tags(body)]),
        links=markup.wikilinks(body)))
