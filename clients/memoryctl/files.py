"""Replacing a file the user owns (an agent's settings, a project's context file):
whole or not at all, its mode kept, a copy of it beside it first."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

BACKUP_SUFFIX = ".memoryd-backup"


def replace(path: Path, text: str, *, backup: bool = True) -> Path | None:
    """Write `text` as `path` in one rename; returns the backup's path (None: there
    was no file, or `backup` is off). A file linked from a dotfiles folder stays a
    link: its target is written."""
    target = path.resolve() if path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    mode, saved = 0o600, None
    if target.exists():
        mode = target.stat().st_mode & 0o777
        if backup:
            saved = target.with_name(target.name + BACKUP_SUFFIX)
            shutil.copy2(target, saved)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return saved
