"""Conflict copies another sync tool left beside a memory's file (store/copies.py names
them): the two merged by the sync's rules (history/merge.py) into the original's file,
the losing text kept as a version, and the copy removed once that is durable (by
FileSync, after the unit of work commits)."""

from __future__ import annotations

import structlog

from memoryd.engine.unit import UnitOfWork
from memoryd.history import merge
from memoryd.schema import content_hash
from memoryd.store import copies
from memoryd.store.catalog_writes import Writer
from memoryd.store.files import MarkdownStore, UnsafePath

log = structlog.get_logger("memoryd.engine")


def conflict_copy(files: MarkdownStore, catalog: Writer, uow: UnitOfWork, path: str
                  ) -> tuple[str, str] | None:
    """Stage the merge of the copy at `path` into its original: ("updated", scope).
    None: not a copy of the memory beside it (then it is a file like any other)."""
    found = copies.original_of(path)
    # A copy made of a copy (`name (1) (1).md`): its original is the first file of the
    # chain that is there.
    while found is not None and not files.lexists(found[0]):
        deeper = copies.original_of(found[0])
        found = (deeper[0], found[1]) if deeper is not None else None
    if found is None:
        return None
    original, scheme = found
    texts = []
    for each in (original, path):
        try:
            data = files.read_bytes(each)
            texts.append(merge.read(each, data.decode("utf-8")) if data else None)
        except (UnsafePath, OSError, UnicodeDecodeError):
            return None
    mine, copy = texts
    if mine is None or copy is None or mine.memory.id != copy.memory.id:
        return None
    merged = merge.merge(mine, copy)
    if merged.text != mine.text:
        winner = merged.winner.memory
        winner.content_hash = content_hash(winner.content)  # an edited copy's may be stale
        if winner.content != mine.memory.content:
            uow.keep_version(mine.memory, original)
        uow.put(winner, original)
    elif merged.kept is not None:
        uow.keep_version(copy.memory, original)
    if catalog.record_by_path(path) is not None:  # indexed before: no longer
        uow.unindex(path)
    log.info("store.conflict_copy_merged", path=path, original=original, scheme=scheme,
             winner="copy" if merged.text != mine.text else "original")
    return "updated", merged.winner.memory.scope
