"""Conflict copies: the second file another sync tool leaves beside a file two
machines changed at once, named after the original.

- Syncthing: `name.sync-conflict-20261126-101112-ABCDEFG.md`
- Dropbox: `name (Ann's conflicted copy 2026-11-26).md`, `name (conflicted copy …).md`
- Google Drive, OneDrive and others: `name (1).md`

A name alone proves nothing (`meeting (1).md` may be a note of its own): FileSync takes
a file for a copy only when the original is there and both hold the same memory id,
then merges the two by the sync's rules (history/merge.py) and removes the copy.
"""

from __future__ import annotations

import re

_SYNCTHING = re.compile(r"^(?P<stem>.+)\.sync-conflict-\d{8}-\d{6}(?:-[A-Z0-9]{7})?"
                        r"(?P<ext>\.md)$")
_DROPBOX = re.compile(r"^(?P<stem>.+?) \((?:[^()/]*'s )?conflicted copy[^()/]*\)"
                      r"(?P<ext>\.md)$", re.IGNORECASE)
_NUMBERED = re.compile(r"^(?P<stem>.+?) \([1-9][0-9]?\)(?P<ext>\.md)$")
SCHEMES = (("syncthing", _SYNCTHING), ("dropbox", _DROPBOX), ("numbered", _NUMBERED))


def original_of(relpath: str) -> tuple[str, str] | None:
    """(the path of the file a conflict copy's name says it copies, the naming
    scheme), or None when the name is no copy's."""
    folder, _, name = relpath.rpartition("/")
    for scheme, pattern in SCHEMES:
        match = pattern.match(name)
        if match:
            original = match["stem"] + match["ext"]
            return (f"{folder}/{original}" if folder else original), scheme
    return None
