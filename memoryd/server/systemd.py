"""sd_notify without libsystemd: READY=1, STATUS=..., STOPPING=1 for Type=notify units."""

from __future__ import annotations

import os
import socket


def sd_notify(state: str) -> bool:
    addr = os.environ.get("NOTIFY_SOCKET")
    if not addr:
        return False
    if addr[0] == "@":
        addr = "\0" + addr[1:]  # abstract namespace
    elif addr[0] != "/":
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(addr)
            sock.sendall(state.encode())
    except OSError:
        return False
    return True
