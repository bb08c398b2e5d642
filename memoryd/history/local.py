"""What each machine keeps its own: never committed, never synced.

A machine's settings (`config.yaml`: its model, its LLM endpoint, its redaction, its
remote) and its logs (`logs/`: the hooks' log) differ from machine to machine by
design. In the history both machines would change them, every sync would report a
file git cannot merge, and whoever can push would set this machine's settings. So they
are left out of the repository (`.gitignore`), a root that tracked them from before
stops tracking them (the files stay where they are), and a sync neither takes nor
sends them. `.gitignore` itself is this machine's too: a remote's is never written.
"""

from __future__ import annotations

from pathlib import PurePosixPath

IGNORE_FILE = ".gitignore"
FILES = ("config.yaml", IGNORE_FILE)  # at the root
FOLDERS = ("logs",)  # at the root, with everything in them
IGNORED = ("/config.yaml", "/logs/")  # the lines that leave them out of the history
TRACKED_BEFORE = ("config.yaml", "logs")  # what an older root's history may hold


def is_local(path: str) -> bool:
    """Whether a root-relative path is this machine's own."""
    parts = PurePosixPath(path).parts
    return bool(parts) and ((len(parts) == 1 and parts[0] in FILES) or parts[0] in FOLDERS)


def missing_lines(ignore_text: str) -> list[str]:
    """The IGNORED lines a `.gitignore` (a user's, or an older root's) lacks."""
    have = {line.strip() for line in ignore_text.splitlines()}
    return [line for line in IGNORED if line not in have]
