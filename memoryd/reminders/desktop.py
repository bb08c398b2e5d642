"""Desktop notifications where the desktop has a way: notify-send, osascript.
Quietly nothing where there is none (a server, CI)."""

from __future__ import annotations

import shutil
import subprocess
import sys


def command(title: str, body: str) -> list[str] | None:
    if sys.platform == "darwin" and shutil.which("osascript"):
        quote = lambda s: s.replace("\\", "\\\\").replace('"', '\\"')  # noqa: E731
        return ["osascript", "-e",
                f'display notification "{quote(body)}" with title "{quote(title)}"']
    if shutil.which("notify-send"):
        return ["notify-send", "--app-name=memoryd", title, body]
    return None


def notify(title: str, body: str) -> bool:
    """True if a notification was handed to the desktop."""
    argv = command(title, body[:400])
    if argv is None:
        return False
    try:
        return subprocess.run(argv, timeout=5, capture_output=True).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
