"""Markdown as note apps write it: [[wikilinks]], #tags, front matter, code."""

from __future__ import annotations

import re
from typing import Any

from memoryd.schema import clean_tags
from memoryd.store import frontmatter

# [[Note]], [[Note|label]], [[Note#Heading]], [[Note^block]], ![[embed]]
_WIKILINK = re.compile(r"!?\[\[([^\[\]\n]+?)\]\]")
# #tag (not a heading, not inside a word or URL), and Logseq's #[[multi word]].
_TAG = re.compile(r"(?:(?<=\s)|^)#(\[\[[^\[\]\n]+\]\]|[^\s#\[\](){},.;:!?\"'`]+)", re.M)
_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_TAG_CHARS = re.compile(r"^[^,\r\n]{1,64}$")


def without_code(text: str) -> str:
    """The text without fenced code blocks and inline code (they hold no links)."""
    return _INLINE_CODE.sub(" ", _FENCE.sub(" ", text))


def link_target(raw: str) -> str:
    """The note a [[link]] names: the part before `|` (label), `#` (heading), `^`."""
    return re.split(r"[|#^]", raw, maxsplit=1)[0].strip()


def wikilinks(text: str) -> list[str]:
    found = (link_target(m.group(1)) for m in _WIKILINK.finditer(without_code(text)))
    return list(dict.fromkeys(t for t in found if t and "://" not in t))


def relinked(text: str, old: str, new: str) -> str:
    """`text` with each [[link]] to the note named `old` (by its name, or a path that
    ends in it; case ignored) naming `new` instead; its `#heading`, `^block`, `|label`
    and embed `!` stay, and so does a link in code, which is text."""
    code = [m.span() for m in (*_FENCE.finditer(text), *_INLINE_CODE.finditer(text))]

    def swap(match: re.Match[str]) -> str:
        if any(a <= match.start() < b for a, b in code):
            return match.group(0)
        inner = match.group(1)
        target = link_target(inner)
        folder, _, name = target.rpartition("/")
        if name.removesuffix(".md").casefold() != old.casefold() or "://" in target:
            return match.group(0)
        at = inner.index(target)
        renamed = f"{folder}/{new}" if folder else new
        return match.group(0).replace(inner, inner[:at] + renamed + inner[at + len(target):], 1)

    return _WIKILINK.sub(swap, text)


def inline_tags(text: str) -> list[str]:
    tags = []
    for match in _TAG.finditer(without_code(text)):
        tag = match.group(1)
        tag = tag[2:-2] if tag.startswith("[[") else tag.rstrip("/")
        if tag and not tag.isdigit():
            tags.append(tag)
    return valid_tags(tags)


def valid_tags(values: list[str]) -> list[str]:
    """Tags as the schema takes them: no commas or line breaks, 1-64 characters."""
    out = []
    for value in values:
        value = value.strip().lstrip("#").strip()
        if "," in value:
            out.extend(valid_tags(value.split(",")))
        elif _TAG_CHARS.match(value):
            out.append(value)
    return clean_tags(out)


def listish(value: Any) -> list[str]:
    """A front-matter value that should be a list: a YAML list, or a string of
    comma-separated items. Other types are ignored."""
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, str | int | float) and str(v).strip()]
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return []


def front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(front matter, body). A front matter that is not plain YAML data is kept as
    part of the body (it is still the user's text)."""
    try:
        head, body = frontmatter.split(text)
    except frontmatter.FrontMatterError:
        return {}, text
    return (head if isinstance(head, dict) else {}), body


def titled(title: str, body: str) -> str:
    """The body under its title as a heading, unless it already starts with one."""
    body = body.strip()
    first = body.splitlines()[0] if body else ""
    if first.startswith("#") and first.lstrip("#").strip().casefold() == title.casefold():
        return body
    return f"# {title}\n\n{body}" if body else f"# {title}"
