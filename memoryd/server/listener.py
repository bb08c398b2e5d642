"""The Unix socket listener (trio has none built in) and the peer's credentials."""

from __future__ import annotations

import contextlib
import os
import socket
import struct
from pathlib import Path

import trio

MAX_SOCKET_PATH = 104  # sun_path: 108 bytes on Linux, 104 on macOS; keep to the smaller


class SocketPathTooLong(ValueError):
    pass


async def open_unix_listener(path: Path, backlog: int = 128) -> trio.SocketListener:
    encoded = os.fsencode(path)
    if len(encoded) >= MAX_SOCKET_PATH:
        raise SocketPathTooLong(f"socket path {path} is {len(encoded)} bytes; Unix sockets "
                                f"allow {MAX_SOCKET_PATH - 1}: use a shorter --root or --socket")
    # A stale socket from a dead daemon: safe to remove, we hold the daemon lock.
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
    old_umask = os.umask(0o177)  # bind() creates the file 0600: no chmod race
    try:
        await sock.bind(str(path))
    finally:
        os.umask(old_umask)
    sock.listen(backlog)
    return trio.SocketListener(sock)


def peer_credentials(stream: trio.SocketStream) -> tuple[int, int] | None:
    """(pid, uid) of the connected peer, where the platform tells (Linux SO_PEERCRED)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    try:
        raw = stream.socket.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    except OSError:
        return None
    pid, uid, _gid = struct.unpack("3i", raw)
    return pid, uid
