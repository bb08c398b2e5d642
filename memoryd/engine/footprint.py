"""What the daemon's memory holds, by part, for `stats` (the user's own tooling): the
process's resident set, what malloc holds of it (in use, freed but kept, mapped on its
own), the index's arrays, the embedder's vector cache, and the vector store's process.
A long-running daemon's growth is read off these: arrays that grow with the store are
data, free blocks the allocator keeps are not.

Sizes are in MB (10^6 bytes). The index's part is counted under its read hold, array
by array (no row is visited); the rest reads the allocator's and the kernel's counters.
What is resident and in none of these is mostly Python's own objects (the index's maps,
a row's metadata) and the threads' stacks.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd import allocator

if TYPE_CHECKING:
    from memoryd.engine import Engine

MB = 1_000_000
# /proc/<pid>/status fields -> the names `stats` gives them.
_STATUS = {"VmRSS": "rss", "RssAnon": "anonymous", "RssFile": "files"}


async def describe(engine: Engine) -> dict[str, Any]:
    arrays = await engine.stores.workers.read(engine.stores.hybrid.footprint)
    texts, cached = engine.embedder.cache_bytes()
    held = allocator.held()
    vectors_pid = engine.stores.hybrid.vectors.pid
    model_pid = (engine.embedder.describe().get("apart") or {}).get("pid")
    return {
        **{f"{k}_mb": v for k, v in (process(os.getpid()) or {}).items()},
        "allocator_mb": {k: _mb(v) for k, v in held.items()} if held is not None else None,
        "index_mb": {k: _mb(v) for k, v in arrays.items()},
        "embedder_cache": {"texts": texts, "mb": _mb(cached)},
        "vectors_process_mb": (process(vectors_pid) or {}).get("rss")
        if vectors_pid is not None else None,
        "model_process_mb": (process(model_pid) or {}).get("rss")
        if model_pid is not None else None,
    }


def process(pid: int) -> dict[str, float] | None:
    """The resident set of process `pid` in MB: all of it, its anonymous pages and its
    file-backed ones (Linux); None where /proc does not tell (another system, or the
    process ended)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return None
    found: dict[str, float] = {}
    for line in lines:
        name, _, value = line.partition(":")
        key = _STATUS.get(name)
        if key is not None and value.strip().endswith("kB"):
            found[key] = _mb(int(value.split()[0]) * 1024)
    return found or None


def _mb(size: int) -> float:
    return round(size / MB, 1)
