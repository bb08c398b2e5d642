"""The line framing the daemon and every client share; its one definition lives in the
stdlib-only client package (memoryd_client/framing.py)."""

from memoryd_client.framing import LINE_TOO_LONG, MAX_LINE, LineFramer, LineTooLong

__all__ = ["LINE_TOO_LONG", "MAX_LINE", "LineFramer", "LineTooLong"]
