"""Which embedder a store uses: the one its vectors were made with; int8 for a new store.

`embedder.variant: auto` (the default) reads `index/embedder`, the variant the store's
vectors were made with. A store without that record but with an index was built before
the record existed, when fp32 was the only default: it stays fp32, so an upgrade
re-embeds nothing. A new store, and `memoryd reindex` (which re-embeds everything
anyway), get int8: it ranks as well as fp32 on LoCoMo and embeds about 2.5x faster.
A variant named in the config always wins; the record then follows it.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import structlog

from memoryd.config import ConfigError, EmbedderConfig

log = structlog.get_logger(__name__)

VARIANTS = ("fp32", "int8")
DEFAULT = "int8"
LEGACY = "fp32"
RECORD = "embedder"
# The keyword catalog exists in every store that was ever started.
BUILT = "keyword.sqlite"


# The environment may force the variant and the model's threads over the config, as
# MEMORYD_SCORING forces the scoring path: to check that no result depends on them
# (the test suite is run with each).
FORCE_VARIANT = "MEMORYD_EMBEDDER"
FORCE_THREADS = "MEMORYD_EMBEDDER_THREADS"


def forced(config: EmbedderConfig) -> EmbedderConfig:
    """`config` with what the environment forces over it; a value that is not one we
    know is refused (ConfigError), not ignored. The engine's wiring applies it (the
    daemon's, `memoryd reindex`'s and an in-process engine's alike); the daemon's start
    asks first, to refuse a bad value with a message instead of a traceback."""
    changes: dict[str, object] = {}
    if (name := os.environ.get(FORCE_VARIANT)) is not None:
        if name not in VARIANTS:
            raise ConfigError(f"{FORCE_VARIANT}={name!r}: expected one of {', '.join(VARIANTS)}")
        changes["variant"] = name
    if (threads := os.environ.get(FORCE_THREADS)) is not None:
        if not threads.isdigit() or int(threads) < 1:
            raise ConfigError(f"{FORCE_THREADS}={threads!r}: expected a whole number >= 1")
        changes["threads"] = int(threads)
    return msgspec.structs.replace(config, **changes)


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
