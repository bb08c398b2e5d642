"""A memory's readable file name: its title as a file-system-safe slug, then a short
stable suffix of its id (`ann-smith-0b6c2f3e.md`).

The slug keeps letters and digits of every script (NFC, lower case: a name never
differs from another only by case, which macOS and Windows file systems do not tell
apart), turns everything else into `-` (separators, the characters Windows reserves,
controls, dots: no hidden or extension-looking names), and is bounded in characters and
UTF-8 bytes (file systems count bytes). The id's suffix makes the name unique and keeps
Windows' reserved device names (`con`, `aux`…) from standing alone; where another file
already holds a name, the whole id is used. The name is chosen once: a later title
change does not rename the file (`memory_rename` does)."""

from __future__ import annotations

import re
import unicodedata

MAX_SLUG_CHARS = 60
MAX_SLUG_BYTES = 120
SHORT_ID = 8
_DASHES = re.compile(r"-{2,}")


def _kept(ch: str) -> bool:
    """Letters, marks (a Devanagari vowel sign) and digits of any script."""
    return unicodedata.category(ch)[0] in "LMN"


def slug(title: str) -> str:
    """`title` as the readable part of a file name ("" when nothing of it is left)."""
    text = unicodedata.normalize("NFC", title).lower().replace("'", "").replace("’", "")
    text = "".join(ch if _kept(ch) else "-" for ch in text)
    text = _DASHES.sub("-", text).strip("-")[:MAX_SLUG_CHARS]
    while len(text.encode("utf-8")) > MAX_SLUG_BYTES:
        text = text[:-1]
    return text.strip("-")


def candidates(title: str, memory_id: str, keep_name: bool = False) -> list[str]:
    """The file names a memory may take, the preferred first: `<slug>-<short id>.md`,
    `<slug>-<id>.md`, and `<id>.md` (a title with no letters or digits). `keep_name`
    (a note ingested from another tool): its own name first, where every file system
    takes it as it is (`as_named`), so the tool's `[[Page Name]]` links find it."""
    base = slug(title)
    names = [f"{base}-{memory_id[:SHORT_ID]}.md", f"{base}-{memory_id}.md"] if base else []
    own = as_named(title) if keep_name else None
    return [*dict.fromkeys([*([own] if own else []), *names, f"{memory_id}.md"])]


# Characters a file name cannot hold on Windows (and `/` nowhere), and its device names;
# `#^[]` and `|` would end the name inside an Obsidian link (a heading, a block, a label).
_RESERVED = re.compile(r'[<>:"/\\|?*#^\[\]\x00-\x1f\x7f]')
_DEVICES = frozenset({"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)),
                      *(f"lpt{i}" for i in range(1, 10))})


def as_named(title: str) -> str | None:
    """`title` itself as a file name (`Page Name.md`), or None where some file system
    would not take it as it is: a reserved character, a leading or trailing dot or
    space, a device name, too long. (Obsidian finds `[[Page Name]]` by the file's name.)"""
    name = unicodedata.normalize("NFC", title)
    if (not name or _RESERVED.search(name) or name[0] in ". " or name[-1] in ". "
            or name.split(".")[0].strip().casefold() in _DEVICES
            or len(name.encode("utf-8")) > MAX_SLUG_BYTES):
        return None
    return f"{name}.md"


def id_in_name(name: str) -> str:
    """The id a file named by its id carries: `<id>.md`, `<stamp>__<id>.md` (a turn),
    `<id>.<n>.md` (an earlier version kept beside another in the trash)."""
    stem = name.removesuffix(".md").rsplit("__", 1)[-1]
    head, _, tail = stem.rpartition(".")
    return head if head and tail.isdigit() else stem


def given_by_hand(name: str, memory_id: str) -> bool:
    """Whether a file name is a person's (a note made in an editor: its name is its
    title), not one memoryd gave (`<id>.md`, `<stamp>__<id>.md`, a readable name)."""
    stem = name.removesuffix(".md")
    return not (stem == memory_id or stem.endswith((f"__{memory_id}", f"-{memory_id}",
                                                    f"-{memory_id[:SHORT_ID]}")))
