"""A memory's title: what a person sees in a list, a search result, an editor's file
tree, and what its readable file name is made of.

A note's is its first heading, else its first line, without Markdown's marks and
shortened at a word; an ingested page's is its name (its first heading); a fact's, a
reminder's, its own text shortened; a turn's, its session, role and time; a summary's,
its session's. A title given with a write is kept; a derived one follows the content
when that changes (it is derived again)."""

from __future__ import annotations

import re

from memoryd.schema import Memory

MAX_TITLE = 80  # characters
_MARKS = re.compile(r"^\s{0,3}(?:#{1,6}\s+|[-*+]\s+(?:\[[ xX]\]\s+)?|>\s*|\d+[.)]\s+)")
_LINK = re.compile(r"\[\[([^\]|#^]+)(?:[#^][^\]|]*)?(?:\|([^\]]+))?\]\]")
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_EMPHASIS = re.compile(r"(\*\*|__|\*|_|`|~~)(\S(?:.*?\S)?)\1")
_SPACES = re.compile(r"\s+")


def title_for(memory: Memory) -> str:
    """The title derived from what the memory is and says."""
    if memory.kind == "turn":
        when = memory.created_at.strftime("%Y-%m-%d %H:%M")
        return f"{memory.session or 'conversation'} {memory.role or 'turn'} {when}"
    if memory.kind == "summary" and memory.session:
        return f"Summary of {memory.session}"
    return shortened(first_line(memory.content)) or memory.id


def first_line(text: str) -> str:
    """The first line that says something, as plain text."""
    for line in text.splitlines():
        line = _MARKS.sub("", line).strip()
        if line and not line.startswith(("```", "---", "<!--")):
            line = _LINK.sub(lambda m: m.group(2) or m.group(1), line)
            line = _MD_LINK.sub(r"\1", line)
            return _EMPHASIS.sub(r"\2", line).strip()
    return ""


def shortened(text: str, limit: int = MAX_TITLE) -> str:
    """`text` on one line, at most `limit` characters, cut at a word with `…`."""
    text = _SPACES.sub(" ", text).strip()
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:.-") + "…"


def titled(memory: Memory) -> Memory:
    """`memory` with a title: its own, else the derived one."""
    if not memory.title:
        memory.title = title_for(memory)
    return memory
