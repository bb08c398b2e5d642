"""`memoryctl obsidian`: the memory root made pleasant to open as an Obsidian vault.

Obsidian shows the Markdown files of a folder; of memoryd's own files only `index/`
(its folders), `trash/` (deleted memories and kept versions, named by id) and, when
there are many, the conversation turns under `sessions/` are in the way. This writes
them into the vault's "Excluded files" (`.obsidian/app.json`, `userIgnoreFilters`),
every other setting of that file kept, and keeps Obsidian's own churn (which file is
open, its caches) out of memoryd's git history (`.gitignore`). Dot files (the lock,
temporary files) Obsidian never shows."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from memoryctl import files

HIDDEN = ["index/", "trash/"]
SESSIONS = "sessions/"
# What Obsidian rewrites as it is used: not history.
GIT_IGNORED = ["/.obsidian/workspace.json", "/.obsidian/workspace-mobile.json",
               "/.obsidian/cache/"]


def configure(root: Path, show_sessions: bool = False, dry_run: bool = False
              ) -> dict[str, Any]:
    """Merge the filters into the vault's settings; what was (or would be) changed."""
    app = root / ".obsidian" / "app.json"
    settings = files.json_object(app)
    if not isinstance(settings.get("userIgnoreFilters", []), list):
        raise files.SettingsError(f"{app}: not the settings Obsidian writes; left alone")
    filters = list(settings.get("userIgnoreFilters", []))
    wanted = HIDDEN + ([] if show_sessions else [SESSIONS])
    added = [f for f in wanted if f not in filters]
    if show_sessions and SESSIONS in filters:
        filters.remove(SESSIONS)
    settings["userIgnoreFilters"] = filters + added
    ignore = root / ".gitignore"
    lines = ignore.read_text(encoding="utf-8").splitlines() if ignore.exists() else []
    ignored = [line for line in GIT_IGNORED if line not in lines]
    if not dry_run:
        files.replace(app, json.dumps(settings, indent=2) + "\n", backup=False)
        if ignored:
            files.replace(ignore, "\n".join([*lines, "# Obsidian's own state", *ignored])
                          + "\n", backup=False)
    return {"settings": str(app), "excluded": settings["userIgnoreFilters"],
            "added": added, "git_ignored": ignored, "dry_run": dry_run}


def run(root: Path, show_sessions: bool, dry_run: bool) -> int:
    try:
        done = configure(root, show_sessions, dry_run)
    except (ValueError, OSError) as exc:
        print(f"memoryctl obsidian: {exc}", file=sys.stderr)
        return 1
    verb = "would exclude" if dry_run else "excluded"
    print(f"{done['settings']}: {verb} {', '.join(done['excluded'])}"
          + (f"; .gitignore {'would get' if dry_run else 'got'} "
             f"{', '.join(done['git_ignored'])}" if done["git_ignored"] else "")
          + f"\nopen {root} in Obsidian (Open folder as vault)")
    return 0
