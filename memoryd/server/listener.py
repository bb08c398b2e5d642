"""The Unix socket listener (trio has none built in) and the peer's credentials."""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import stat
import struct
from collections.abc import Awaitable, Callable
from pathlib import Path

import structlog
import trio

log = structlog.get_logger("memoryd")

MAX_SOCKET_PATH = 104  # sun_path: 108 bytes on Linux, 104 on macOS; keep to the smaller


class SocketPathTooLong(ValueError):
    pass


class SocketInUse(RuntimeError):
    """Something answers on the socket path (another daemon, maybe on another root),
    or the path is not a socket at all: it is never removed."""


def check_socket_path(path: Path) -> None:
    """Raise unless `path` is free or holds a stale socket (which is removed). A live
    socket is never taken over: its daemon would stay up but unreachable."""
    encoded = os.fsencode(path)
    if len(encoded) >= MAX_SOCKET_PATH:
        raise SocketPathTooLong(f"socket path {path} is {len(encoded)} bytes; Unix sockets "
                                f"allow {MAX_SOCKET_PATH - 1}: use a shorter --root or --socket")
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise SocketInUse(f"{path} exists and is not a socket; memoryd will not remove it: "
                          "pass another --socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(2)
    try:
        probe.connect(str(path))
    except (ConnectionRefusedError, FileNotFoundError):  # stale: its daemon is gone
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    except OSError as exc:
        raise SocketInUse(f"cannot tell whether {path} is in use ({exc}); memoryd will not "
                          "replace it") from None
    finally:
        probe.close()
    raise SocketInUse(f"another process (a memoryd on another root?) is answering on {path}; "
                      "stop it first or pass another --socket")


def socket_identity(path: Path) -> tuple[int, int] | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


async def open_unix_listener(path: Path, backlog: int = 128) -> trio.SocketListener:
    check_socket_path(path)
    sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
    old_umask = os.umask(0o177)  # bind() creates the file 0600: no chmod race
    try:
        await sock.bind(str(path))
    finally:
        os.umask(old_umask)
    sock.listen(backlog)
    return trio.SocketListener(sock)


# What trio's serve_listeners waits out: the process or the system is out of file
# descriptors or memory, which a closing connection gives back. Any other error from
# accept() would repeat forever, so it is raised.
CAPACITY_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
CAPACITY_WAIT = 0.1  # seconds between tries while at capacity


async def accept_forever(listener: trio.abc.Listener[trio.SocketStream],
                         handle: Callable[[trio.SocketStream], Awaitable[None]],
                         nursery: trio.Nursery) -> None:
    """Accept connections into `nursery` until the listener is closed. At capacity
    (EMFILE and the like) wait and try again, logging once a spell; raise the rest."""
    spell = 0
    while True:
        try:
            stream = await listener.accept()
        except trio.ClosedResourceError:
            return  # shutting down: the listener was closed
        except OSError as exc:
            if exc.errno not in CAPACITY_ERRNOS:
                log.error("accept.failed", error=str(exc))
                raise
            if not spell:
                log.warning("accept.at_capacity", error=errno.errorcode[exc.errno],
                            retry_every_s=CAPACITY_WAIT)
            spell += 1
            await trio.sleep(CAPACITY_WAIT)
            continue
        if spell:
            log.info("accept.recovered", tries=spell)
            spell = 0
        nursery.start_soon(handle, stream)


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
