"""memoryctl's commands for coding agents: `hooks install|uninstall|status <agent>`,
`hook <agent>` (what the agent runs), `projects`, and the project a `--project DIR`
names."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from memoryctl import hook, hook_settings, project
from memoryctl.agents import AGENTS
from memoryd_client import Client, resolve_root


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    names = ", ".join(AGENTS)
    p = sub.add_parser("hooks", parents=[common], help="install memoryd's hooks into a "
                       f"coding agent ({names}), or remove them",
                       description="Merge memoryd's hooks into a coding agent's settings "
                       "(the user's, or with --project a repository's), keeping every "
                       "other key and hook; uninstall removes only memoryd's.")
    p.add_argument("action", choices=["install", "uninstall", "status"],
                   help="install (or replace) memoryd's hooks, remove them, or count them")
    p.add_argument("agent", choices=list(AGENTS), help="the coding agent")
    p.add_argument("--project", metavar="DIR", help="the repository's own settings "
                   "(DIR/.claude/settings.json...) instead of the user's")
    p.add_argument("--dry-run", action="store_true", help="print the settings as they "
                   "would be; change nothing")
    p = sub.add_parser("hook", parents=[common], help="run one hook event of a coding "
                       "agent (the agent calls this, with the event's JSON on stdin)")
    p.add_argument("agent", choices=list(AGENTS), help="the coding agent that runs it")
    sub.add_parser("projects", parents=[common], help="the projects memoryd holds "
                   "memories of, and which one this folder is")


def scope_of(folder: str) -> str:
    """A `--project` value: a scope as given (`project:...`), else the folder's."""
    return folder if folder.startswith(project.SCOPE_PREFIX) else project.of_folder(
        folder).scope


def run_hooks(args: argparse.Namespace, socket_path: Path) -> int:
    root: str | None = getattr(args, "root", None)
    agent = AGENTS[args.agent]
    folder = None
    if args.project:
        found = project.of_folder(args.project)
        folder = found.root or Path(args.project).expanduser().resolve()
    path = hook_settings.settings_path(agent, folder, Path.home())
    try:
        if args.action == "status":
            count = hook_settings.uninstall(agent, path, dry_run=True, within=folder).removed
            print(f"{agent.title}: {count} memoryd hook{'s' * (count != 1)} in {path}"
                  if path.exists() else f"{agent.title}: no settings file at {path}")
            return 0
        if args.action == "install":
            change = hook_settings.install(agent, path, hook_settings.command(agent, root),
                                           dry_run=args.dry_run, within=folder)
        else:
            change = hook_settings.uninstall(agent, path, dry_run=args.dry_run, within=folder)
    except (hook_settings.SettingsError, OSError) as exc:
        print(f"memoryctl hooks: {exc}", file=sys.stderr)
        return 1
    if args.dry_run:
        print(change.text, end="")
        print(f"(dry run: {path} is unchanged)", file=sys.stderr)
        return 0
    if args.action == "install":
        print(f"{agent.title}: memoryd's hooks for {', '.join(change.added)} in {path}"
              + (f" (replacing {change.removed} earlier)" if change.removed else ""))
    else:
        print(f"{agent.title}: {change.removed} memoryd hook"
              f"{'s' * (change.removed != 1)} removed from {path}")
    if change.backup:
        print(f"the file as it was: {change.backup}")
    return 0


def run_hook(args: argparse.Namespace, socket_path: Path) -> int:
    return hook.run(AGENTS[args.agent], sys.stdin, sys.stdout, socket_path,
                    resolve_root(getattr(args, "root", None)))


def projects(client: Client) -> dict[str, Any]:
    """Each project scope with its count, and the project of the current folder."""
    by_scope: dict[str, int] = client.call("stats")["by_scope"]
    here = project.of_folder(".")
    return {"projects": [{"scope": s, "memories": n} for s, n in sorted(by_scope.items())
                         if s.startswith(project.SCOPE_PREFIX)],
            "here": {"scope": here.scope, "identity": here.identity,
                     "root": str(here.root) if here.root else None}}
