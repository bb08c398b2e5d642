"""Files the user owns (an agent's settings, a vault's, a project's context file):
a JSON settings file read as the object it must be, and a file replaced whole or not at
all, its mode kept, a copy of it beside it first.

A repository is not trusted: a settings or context file it ships may be a link out of
it, a FIFO, or a link to nothing. Such a file is left alone with a reason (`within`:
the folder a file and what it links to must stay in), and the copy kept beside a file
is a new file, never written through a link that stands where it goes."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

BACKUP_SUFFIX = ".memoryd-backup"  # the file as it was before memoryd first wrote it
UNDONE_SUFFIX = ".memoryd-uninstall-backup"  # as it was before memoryd's part was undone


class SettingsError(ValueError):
    """A settings file that cannot be merged into (it is left alone)."""


def checked(path: Path, within: Path | None = None) -> Path:
    """The file that reading or writing `path` reaches: `path`, or what it links to (a
    settings file linked from a dotfiles folder). SettingsError for a link to nothing, a
    file that is not a regular one, or one outside `within`."""
    resolved, linked = path.resolve(), path.is_symlink()
    target = resolved if linked else path
    if linked and not resolved.exists():
        raise SettingsError(f"{path} is a link to {resolved}, which does not exist; left "
                            f"alone")
    if within is not None and not resolved.is_relative_to(within.resolve()):
        raise SettingsError(f"{path} leads to {resolved}, outside {within}; left alone")
    if target.exists() and not target.is_file():
        raise SettingsError(f"{path} is not a regular file; left alone")
    return target


def read(path: Path, within: Path | None = None) -> str:
    """The text of `path` ("" when there is none), by `checked`'s rules."""
    target = checked(path, within)
    return target.read_text(encoding="utf-8") if target.exists() else ""


def json_object(path: Path, within: Path | None = None) -> dict[str, Any]:
    """The JSON object a settings file holds ({} when there is none)."""
    target = checked(path, within)
    if not target.exists():
        return {}
    try:
        data = json.loads(target.read_text(encoding="utf-8") or "{}")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SettingsError(f"{path} is not readable JSON ({exc}); left alone") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path} does not hold a JSON object; left alone")
    return data


def replace(path: Path, text: str, *, backup: bool = True,
            within: Path | None = None, suffix: str = BACKUP_SUFFIX) -> Path | None:
    """Write `text` as `path` in one rename; returns the backup's path (None: there
    was no file, or `backup` is off), the file's name with `suffix`. A file linked from
    a dotfiles folder stays a link: its target is written (by `checked`'s rules)."""
    target = checked(path, within)
    target.parent.mkdir(parents=True, exist_ok=True)
    mode, saved = 0o600, None
    if target.exists():
        mode = target.stat().st_mode & 0o777
        if backup:
            saved = target.with_name(target.name + suffix)
            _write(saved, target.read_bytes(), mode)
    _write(target, text.encode("utf-8"), mode)
    return saved


def _write(target: Path, data: bytes, mode: int) -> None:
    """`data` as `target`, through a new file renamed over it: whatever stood there (a
    link too) is replaced, never written through."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
