"""`memoryctl hooks install|uninstall <agent>`: memoryd's hooks merged into an agent's
settings file, everything else of the file kept.

The file is JSON the user owns: every other key and every other hook stays as it was
(in its order, in the file's own indentation); memoryd's hooks are the commands that
run `memoryctl … hook <agent>`, and only those are replaced (install) or removed
(uninstall). The new file replaces the old in one rename (files.py). The file as it was
before memoryd's hooks first went in is copied beside it (`<file>.memoryd-backup`; a
second install keeps that copy), and an uninstall that leaves the same settings as that
copy puts its bytes back, so the file is what it was, byte for byte; otherwise (the user
changed other settings meanwhile) it writes them in the file's own indentation, and the
file before the uninstall is kept as `<file>.memoryd-uninstall-backup`. A file that is
not a JSON object, or whose `hooks` is not one, is refused and left alone.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoryctl import files
from memoryctl.agents import TIMEOUTS, Agent
from memoryctl.files import SettingsError


@dataclass
class Change:
    path: Path
    added: list[str] = field(default_factory=list)  # events that got memoryd's hook
    removed: int = 0  # memoryd's hooks taken out
    backup: Path | None = None
    text: str = ""  # the file as it is (or would be) written
    within: Path | None = None  # the folder the file and what it links to must stay in


def command(agent: Agent, root: str | None = None) -> str:
    """The command an agent runs: this installation's memoryctl, by absolute path."""
    found = shutil.which("memoryctl")
    beside = Path(sys.executable).parent / "memoryctl"
    if found:
        program = [found]
    elif beside.exists():
        program = [str(beside)]
    else:
        program = [sys.executable, "-m", "memoryctl"]
    extra = ["--root", root] if root else []
    return shlex.join([*program, "hook", agent.name, *extra])


def is_ours(hook: object, agent: Agent) -> bool:
    return (isinstance(hook, dict) and isinstance(hook.get("command"), str)
            and re.search(rf"memoryctl\S*'?\s+hook\s+{re.escape(agent.name)}(\s|$)",
                          hook["command"]) is not None)


def settings_path(agent: Agent, project: Path | None, home: Path) -> Path:
    return project / agent.project_settings if project else home / agent.settings


def install(agent: Agent, path: Path, cmd: str, *, dry_run: bool = False,
            within: Path | None = None) -> Change:
    """memoryd's hooks into `path` (`within`: the project a project's settings file, and
    what it links to, must stay in)."""
    data = files.json_object(path, within)
    change = Change(path, within=within)
    style = _style(files.read(path, within))
    hooks = _hooks(data, path, create=True)
    change.removed = _strip(hooks, agent)
    for event, action in agent.events.items():
        timeout = TIMEOUTS[action] * (1000 if agent.milliseconds else 1)
        entry: dict[str, Any] = {"type": "command", "command": cmd, "timeout": timeout}
        if agent.milliseconds:  # Gemini CLI lists hooks by name
            entry = {"name": f"memoryd-{action}", **entry}
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise SettingsError(f"{path}: hooks.{event} is not a list; left alone")
        groups.append({"hooks": [entry]})
        change.added.append(event)
    change.text = _dumps(data, style)
    if not dry_run:  # the copy kept is of the file before memoryd's hooks went in
        change.backup = files.replace(path, change.text, within=within,
                                      backup=not change.removed)
    return change


def uninstall(agent: Agent, path: Path, *, dry_run: bool = False,
              within: Path | None = None) -> Change:
    change = Change(path, within=within)
    if not path.exists():
        return change
    data = files.json_object(path, within)
    text = files.read(path, within)
    hooks = _hooks(data, path, create=False)
    if hooks is not None:
        change.removed = _strip(hooks, agent)
        if not hooks:
            del data["hooks"]
    if not change.removed:
        change.text = text
        return change
    change.text = _before_install(path, data, within) or _dumps(data, _style(text))
    if not dry_run:
        change.backup = files.replace(path, change.text, within=within,
                                      suffix=files.UNDONE_SUFFIX)
    return change


def _before_install(path: Path, data: dict[str, Any], within: Path | None) -> str | None:
    """The file as it was before the install, when it holds just these settings."""
    kept = path.with_name(path.name + files.BACKUP_SUFFIX)
    try:
        before = files.read(kept, within)
        same = bool(before) and _bare(json.loads(before)) == _bare(data)
    except (files.SettingsError, OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return before if same else None


def _bare(data: Any) -> Any:
    """Settings without what holds no hook (an event's empty list, an empty `hooks`):
    what taking memoryd's hooks out may leave or drop."""
    if not isinstance(data, dict) or not isinstance(data.get("hooks"), dict):
        return data
    hooks = {event: groups for event, groups in data["hooks"].items() if groups != []}
    return {k: v for k, v in data.items() if k != "hooks"} | ({"hooks": hooks} if hooks else {})


Style = tuple[str | int | None, bool]  # (indent, a line break at the end)
_INDENT = re.compile(r"^[{\[][ \t]*\r?\n([ \t]+)\S", re.M)


def _style(text: str) -> Style:
    """How a JSON file is laid out: its indentation (a tab, n spaces, or one line) and
    whether it ends in a line break; a new file gets 2 spaces and one."""
    if not text.strip():
        return 2, True
    found = _INDENT.search(text.lstrip())
    indent: str | int | None = None
    if found:
        unit = found.group(1)
        indent = unit if "\t" in unit else len(unit)
    return indent, text.endswith("\n")


def _dumps(data: dict[str, Any], style: Style) -> str:
    indent, newline = style
    return json.dumps(data, indent=indent, ensure_ascii=False) + ("\n" if newline else "")


def _hooks(data: dict[str, Any], path: Path, *, create: bool) -> Any:
    hooks = data.setdefault("hooks", {}) if create else data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise SettingsError(f"{path}: `hooks` is not an object; left alone")
    return hooks


def _strip(hooks: dict[str, Any], agent: Agent) -> int:
    """Take memoryd's hooks out of every event (a group left empty goes, and an event
    left without groups); how many were taken."""
    removed = 0
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                kept_groups.append(group)
                continue
            kept = [h for h in inner if not is_ours(h, agent)]
            removed += len(inner) - len(kept)
            if kept or not inner:
                kept_groups.append({**group, "hooks": kept})
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    return removed
