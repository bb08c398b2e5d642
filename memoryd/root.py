"""Where the memory lives: `--root`, else $MEMORY_HOME, else ~/.memory.

Stdlib only: memoryctl imports it too.
"""

from __future__ import annotations

import os
from pathlib import Path


def resolve_root(arg: str | None) -> Path:
    raw = arg or os.environ.get("MEMORY_HOME") or "~/.memory"
    return Path(raw).expanduser().absolute()
