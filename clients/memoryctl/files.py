"""Files the user owns (an agent's settings, a vault's, a project's context file):
a JSON settings file read as the object it must be, and a file replaced whole or not at
all, its mode kept, a copy of it beside it first."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

BACKUP_SUFFIX = ".memoryd-backup"


class SettingsError(ValueError):
    """A settings file that cannot be merged into (it is left alone)."""


def json_object(path: Path) -> dict[str, Any]:
    """The JSON object a settings file holds ({} when there is none)."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SettingsError(f"{path} is not readable JSON ({exc}); left alone") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path} does not hold a JSON object; left alone")
    return data


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
