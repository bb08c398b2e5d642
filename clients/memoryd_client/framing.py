"""The line framing every client shares with the daemon: the daemon's own definition
(memoryd/protocol/framing.py, stdlib only), re-exported here for the clients."""

from memoryd.protocol.framing import LINE_TOO_LONG, MAX_LINE, LineFramer, LineTooLong

__all__ = ["LINE_TOO_LONG", "MAX_LINE", "LineFramer", "LineTooLong"]
