"""AccessCounts: access counts buffered in memory, flushed to the files in batches.

A search hit must never cost a file rewrite. Hits accumulate here; replies show
them at once (`overlay`), and `Engine.flush_stats` folds them into the files every
`stats.flush_interval` and at shutdown. A crash loses at most one interval of
counts, never a memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from memoryd.schema import Memory, utcnow


@dataclass
class Pending:
    count: int
    last: object  # datetime of the last access


class AccessCounts:
    def __init__(self) -> None:
        self._pending: dict[str, Pending] = {}

    def hit(self, memory_id: str) -> None:
        now = utcnow()
        entry = self._pending.get(memory_id)
        if entry is None:
            self._pending[memory_id] = Pending(1, now)
        else:
            entry.count += 1
            entry.last = now

    def pending(self, memory_id: str) -> Pending | None:
        return self._pending.get(memory_id)

    def forget(self, memory_id: str) -> None:
        self._pending.pop(memory_id, None)

    def consumed(self, memory_id: str, count: int) -> None:
        """`count` hits are now in the file; hits that came in meanwhile stay pending."""
        entry = self._pending.get(memory_id)
        if entry is None or count <= 0:
            return
        entry.count -= count
        if entry.count <= 0:
            self._pending.pop(memory_id, None)

    @property
    def dirty(self) -> list[str]:
        return list(self._pending)

    def overlay(self, memory: Memory) -> Memory:
        entry = self._pending.get(memory.id)
        if entry is None:
            return memory
        return msgspec.structs.replace(
            memory, access_count=memory.access_count + entry.count, last_accessed_at=entry.last
        )
