"""LineFramer: newline-delimited frames, sans-IO (bytes in, lines out).

Its one definition, the daemon's; stdlib only, so memoryd_client (and so memoryctl,
the MCP bridge, the proxy) imports it as it is (an import-linter contract in
pyproject.toml holds it to the standard library). A line longer
than `max_line` is reported once as `LineTooLong` and discarded up to its
newline, so the rest of it is never parsed as garbage and the connection
survives.
"""

from __future__ import annotations

MAX_LINE = 1 << 20  # 1 MiB


class LineTooLong:
    __slots__ = ()

    def __repr__(self) -> str:
        return "LineTooLong()"


LINE_TOO_LONG = LineTooLong()


class LineFramer:
    def __init__(self, max_line: int = MAX_LINE) -> None:
        self.max_line = max_line
        self._buf = bytearray()
        self._scanned = 0  # bytes of _buf already known to hold no newline
        self._discarding = False

    def feed(self, data: bytes) -> list[bytes | LineTooLong]:
        """Add received bytes; return the complete lines (without `\\n`) and overflows."""
        events: list[bytes | LineTooLong] = []
        self._buf += data
        while True:
            newline = self._buf.find(b"\n", self._scanned)
            if newline < 0:
                if self._discarding:
                    self._buf.clear()
                elif len(self._buf) > self.max_line:
                    events.append(LINE_TOO_LONG)
                    self._discarding = True
                    self._buf.clear()
                self._scanned = len(self._buf)
                return events
            line = bytes(self._buf[:newline])
            del self._buf[: newline + 1]
            self._scanned = 0
            if self._discarding:
                self._discarding = False
                continue
            if len(line) > self.max_line:
                events.append(LINE_TOO_LONG)
                continue
            line = line.rstrip(b"\r")
            if line.strip():
                events.append(line)

    @property
    def buffered(self) -> int:
        return len(self._buf)
