"""Which embedder a store uses: the one its vectors were made with; int8 for a new store.

`embedder.variant: auto` (the default) reads `index/embedder`, the variant the store's
vectors were made with. A store without that record but with an index was built before
the record existed, when fp32 was the only default: it stays fp32, so an upgrade
re-embeds nothing. A new store, and `memoryd reindex` (which re-embeds everything
anyway), get int8: it ranks as well as fp32 on LoCoMo and embeds about 3x faster.
A variant named in the config always wins; the record then follows it.
"""

from __future__ import annotations

import os
from pathlib import Path

import structlog

log = structlog.get_logger(__name__)

VARIANTS = ("fp32", "int8")
DEFAULT = "int8"
LEGACY = "fp32"
RECORD = "embedder"
# The keyword catalog exists in every store that was ever started.
BUILT = "keyword.sqlite"


def recorded(index_dir: Path) -> str | None:
    """The variant in `index/embedder`, or None when it is missing or not one we know
    (a hand-edited or damaged record is no record)."""
    try:
        fd = os.open(index_dir / RECORD, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        text = os.read(fd, 64).decode("utf-8", "replace").strip()
    except OSError:
        return None
    finally:
        os.close(fd)
    return text if text in VARIANTS else None


def choose(index_dir: Path, configured: str, *, rebuild: bool = False) -> str:
    """The variant to load for the store whose index is `index_dir`."""
    if configured in VARIANTS:
        return configured
    if rebuild:
        return DEFAULT
    if (found := recorded(index_dir)) is not None:
        return found
    if (index_dir / BUILT).exists():
        log.info("embedder.legacy_store", variant=LEGACY,
                 hint="memoryd reindex moves it to int8")
        return LEGACY
    return DEFAULT


def record(index_dir: Path, variant: str) -> None:
    """Write `index/embedder` (atomically) when it does not already say `variant`."""
    if recorded(index_dir) == variant:
        return
    index_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    partial = index_dir / f".{RECORD}.{os.getpid()}.partial"
    partial.write_text(variant + "\n", encoding="utf-8")
    os.replace(partial, index_dir / RECORD)
