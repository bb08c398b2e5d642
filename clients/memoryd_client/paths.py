"""Where the memory lives and where its socket is: the daemon's own definition
(memoryd/root.py, stdlib only), re-exported here for the clients."""

from memoryd.root import resolve_root, resolve_socket

__all__ = ["resolve_root", "resolve_socket"]
