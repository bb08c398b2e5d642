"""`memoryctl service install|uninstall|status`: memoryd as a user service that starts
at login and comes back after a crash: a systemd user unit (Linux) or a launchd agent
(macOS), running this interpreter's memoryd on the chosen root.

Each step is printed before it runs; `--dry-run` prints the file and the commands and
changes nothing.
"""

from __future__ import annotations

import os
import plistlib
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

UNIT = "memoryd.service"
LABEL = "dev.memoryd.daemon"
WATCHDOG_SECONDS = 120  # the daemon pings at half of it; a hung event loop is restarted


def unit_path() -> Path:
    return Path.home() / ".config" / "systemd" / "user" / UNIT


def plist_path() -> Path:
    return Path.home() / "Library" / "LaunchAgents" / f"{LABEL}.plist"


def _quoted(arg: str) -> str:
    """An ExecStart word: quoted when it holds spaces, quotes or backslashes."""
    if any(c in arg for c in ' "\\\'$%'):
        escaped = arg.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
        return f'"{escaped.replace("$", "$$")}"'
    return arg


def serve_command(root: Path) -> list[str]:
    return [sys.executable, "-m", "memoryd", "serve", "--root", str(root)]


def unit_text(root: Path) -> str:
    """The systemd user unit: Type=notify (READY=1 once the indexes agree with the
    files, STOPPING=1 on the way out, WATCHDOG=1 while the event loop lives)."""
    return "\n".join([
        "[Unit]",
        "Description=memoryd: long-term memory for LLM agents",
        "",
        "[Service]",
        "Type=notify",
        "NotifyAccess=main",
        "ExecStart=" + " ".join(_quoted(a) for a in serve_command(root)),
        "Restart=on-failure",
        "RestartSec=2s",
        # the first start of a large root embeds every memory: give it time
        "TimeoutStartSec=30min",
        "TimeoutStopSec=90s",
        f"WatchdogSec={WATCHDOG_SECONDS}s",
        "Environment=ORT_DISABLE_TELEMETRY=1",
        "Environment=PYTHONUNBUFFERED=1",
        "",
        "[Install]",
        "WantedBy=default.target",
        "",
    ])


def plist_bytes(root: Path) -> bytes:
    """The launchd agent: started at login, restarted when it exits with an error."""
    logs = root / "logs"
    return plistlib.dumps({
        "Label": LABEL,
        "ProgramArguments": serve_command(root),
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "ThrottleInterval": 5,
        "EnvironmentVariables": {"ORT_DISABLE_TELEMETRY": "1", "PYTHONUNBUFFERED": "1"},
        "StandardOutPath": str(logs / "memoryd.out.log"),
        "StandardErrorPath": str(logs / "memoryd.err.log"),
        "WorkingDirectory": str(root),
        "ProcessType": "Background",
    })


@dataclass
class Step:
    says: str
    run: Callable[[], None] | None = None  # a file change; or
    command: list[str] | None = None  # a command
    may_fail: bool = False  # stopping a service that is not there is fine


def _write(path: Path, data: bytes, root: Path) -> Callable[[], None]:
    def run() -> None:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        (root / "logs").mkdir(mode=0o700, exist_ok=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(f".{path.name}.tmp")
        temp.write_bytes(data)
        os.replace(temp, path)
    return run


def _remove(path: Path) -> Callable[[], None]:
    return lambda: path.unlink(missing_ok=True)


def plan(system: str, action: str, root: Path) -> tuple[list[Step], bytes | None]:
    """The steps of an action, and the file it writes (for --dry-run to show)."""
    if system == "systemd":
        path, data = unit_path(), unit_text(root).encode()
        ctl = ["systemctl", "--user"]
        if action == "install":
            return [Step(f"write {path}", run=_write(path, data, root)),
                    Step("reload the user units", command=[*ctl, "daemon-reload"]),
                    Step("enable at login and start now",
                         command=[*ctl, "enable", "--now", UNIT])], data
        if action == "uninstall":
            return [Step("stop and disable", command=[*ctl, "disable", "--now", UNIT],
                         may_fail=True),
                    Step(f"remove {path}", run=_remove(path)),
                    Step("reload the user units", command=[*ctl, "daemon-reload"])], None
        return [Step("ask systemd", command=[*ctl, "status", "--no-pager", UNIT],
                     may_fail=True)], None
    domain = f"gui/{os.getuid()}"
    path, data = plist_path(), plist_bytes(root)
    if action == "install":
        return [Step(f"write {path}", run=_write(path, data, root)),
                Step("unload an older copy", command=["launchctl", "bootout",
                                                      f"{domain}/{LABEL}"], may_fail=True),
                Step("load and start it", command=["launchctl", "bootstrap", domain,
                                                   str(path)])], data
    if action == "uninstall":
        return [Step("stop and unload", command=["launchctl", "bootout", f"{domain}/{LABEL}"],
                     may_fail=True),
                Step(f"remove {path}", run=_remove(path))], None
    return [Step("ask launchd", command=["launchctl", "print", f"{domain}/{LABEL}"],
                 may_fail=True)], None


def default_system() -> str:
    return "launchd" if sys.platform == "darwin" else "systemd"


HINTS = {
    "systemd": "systemctl --user needs a user session (log in, or `loginctl enable-linger "
               "$USER` for a machine without one); the unit file is in place either way",
    "launchd": "launchctl needs a logged-in GUI session",
}


def run(action: str, root: Path, system: str | None = None, dry_run: bool = False,
        out=sys.stdout) -> int:
    system = system or default_system()
    steps, data = plan(system, action, root)
    if dry_run:
        if data is not None:
            target = unit_path() if system == "systemd" else plist_path()
            print(f"would write {target}:\n", file=out)
            print(data.decode(), file=out)
        for step in steps:
            if step.command:
                print(f"would run: {' '.join(step.command)}  ({step.says})", file=out)
            elif step.run:
                print(f"would {step.says}", file=out)
        return 0
    for n, step in enumerate(steps, 1):
        print(f"[{n}/{len(steps)}] {step.says}"
              + (f": {' '.join(step.command)}" if step.command else ""), file=out, flush=True)
        if step.run is not None:
            step.run()
            continue
        assert step.command is not None
        try:
            done = subprocess.run(step.command, capture_output=True, text=True, timeout=120)
        except FileNotFoundError:
            print(f"  {step.command[0]} is not on this machine. {HINTS[system]}", file=out)
            return 1
        shown = (done.stdout + done.stderr).strip()
        if shown:
            print("\n".join(f"  {line}" for line in shown.splitlines()), file=out)
        if done.returncode != 0 and not step.may_fail:
            print(f"  failed (exit {done.returncode}). {HINTS[system]}", file=out)
            return 1
    if action == "install":
        print(f"memoryd is installed as a {system} service for {root}; "
              "`memoryctl status` shows it serving.", file=out)
    return 0
