"""Durations as config writes them: `250ms`, `90s`, `10m`, `168h`, `30d`, `2w`, `1h30m`."""

from __future__ import annotations

import re
from typing import Any

_DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


class Duration(float):
    """Seconds, written in config as `168h`, `30d`, `90s`, `1h30m`, `250ms` or a number."""

    @classmethod
    def parse(cls, value: Any) -> Duration:
        if isinstance(value, bool):
            raise ValueError(f"expected a duration like 30s, 10m, 168h or 30d, got {value!r}")
        if isinstance(value, int | float):
            if value < 0:
                raise ValueError("a duration must not be negative")
            return cls(value)
        if not isinstance(value, str):
            raise ValueError(f"expected a duration like 30s, 10m, 168h or 30d, got {value!r}")
        text = value.strip().replace(" ", "")
        pos, total = 0, 0.0
        for match in _DURATION_RE.finditer(text):
            if match.start() != pos:
                break
            total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
            pos = match.end()
        if pos != len(text) or not text:
            raise ValueError(f"expected a duration like 30s, 10m, 168h or 30d, got {value!r}")
        return cls(total)
