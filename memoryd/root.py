"""Where the memory lives and where its socket is: one definition, the daemon's; stdlib
only, so the clients (memoryd_client, memoryctl) import it as it is.

The root: `--root`, else $MEMORY_HOME, else ~/.memory. The socket: an explicit path,
else $MEMORY_SOCKET, else <root>/memory.sock.
"""

from __future__ import annotations

import os
from pathlib import Path


def resolve_root(arg: str | os.PathLike[str] | None = None) -> Path:
    raw = arg or os.environ.get("MEMORY_HOME") or "~/.memory"
    return Path(raw).expanduser().absolute()


def resolve_socket(root: str | os.PathLike[str] | None = None,
                   socket_path: str | os.PathLike[str] | None = None) -> Path:
    if socket_path:
        return Path(socket_path).expanduser().absolute()
    if env := os.environ.get("MEMORY_SOCKET"):
        return Path(env).expanduser().absolute()
    return resolve_root(root) / "memory.sock"
