"""Obsidian vaults: every Markdown note, its body as written (Obsidian shows the
file's name as its title: that is the memory's title, and its file keeps the name and
the folders it had in the vault, so links in the vault's notes resolve in the root as
they did there); front-matter `tags` and inline #tags; `aliases`, kept as aliases;
[[links]] by file name, path or alias. `.obsidian/`, attachments and any file that is
not Markdown are skipped."""

from __future__ import annotations

from pathlib import Path

from memoryd.ingest import markup, walk
from memoryd.ingest.document import Document, Scan


def read(root: Path) -> Scan:
    scan = Scan()
    for rel, content in walk.texts(root, scan, keep=lambda rel: _markdown(rel, scan)):
        head, body = markup.front_matter(content)
        stem = rel.rsplit("/", 1)[-1][:-3]
        aliases = markup.listish(head.get("aliases", head.get("alias")))
        tags = markup.valid_tags(markup.listish(head.get("tags", head.get("tag"))))
        if not body.strip():
            scan.skip(rel, "empty note")
            continue
        scan.documents.append(Document(
            path=rel, content=body, title=stem,
            names=[stem, rel[:-3]], aliases=aliases,
            tags=markup.valid_tags([*tags, *markup.inline_tags(body)]),
            links=markup.wikilinks(body)))
    return scan


def _markdown(rel: str, scan: Scan) -> bool:
    if rel.lower().endswith(".md"):
        return True
    scan.skip(rel, "not Markdown (attachment or other file)")
    return False
