"""`memoryctl context --write [FILE]`: the project's `<memory>` block kept in a context
file an agent reads by itself (AGENTS.md, CLAUDE.md, GEMINI.md), for an agent without
hooks. The block stands between two marker lines and is regenerated there on each
run; the user's own text around it is never touched. A file without the markers gets
them at its end."""

from __future__ import annotations

from pathlib import Path

from memoryctl import files

BEGIN = ("<!-- memoryd:begin (written by `memoryctl context --write`; what is between "
         "these lines is replaced on each run) -->")
END = "<!-- memoryd:end -->"
EMPTY = "(memoryd remembers nothing for this project yet)"


def merged(existing: str, block: str) -> str:
    """`existing` with the marked section holding `block` (replaced, or added)."""
    section = f"{BEGIN}\n{block.strip() or EMPTY}\n{END}"
    start = existing.find(BEGIN)
    end = existing.find(END, start + len(BEGIN)) if start >= 0 else -1
    if start >= 0 and end >= 0:
        return existing[:start] + section + existing[end + len(END):]
    if not existing.strip():
        return section + "\n"
    return existing.rstrip("\n") + "\n\n" + section + "\n"


def write(path: Path, block: str, within: Path | None = None) -> bool:
    """Regenerate the section in `path`; whether the file changed. A file that is a link
    out of `within` (the project), to nothing, or no regular file is left alone
    (files.SettingsError)."""
    existing = files.read(path, within)
    text = merged(existing, block)
    if text == existing:
        return False
    files.replace(path, text, backup=False, within=within)
    return True
