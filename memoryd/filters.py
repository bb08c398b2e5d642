"""The one filter every read path applies: which memories a list, a search, a smart
search, a recall, an explain or an export may see.

A memory is *live* at the moment `now` when it is
- not superseded: a replaced fact is history, kept under trash/ for memory_history;
- not expired: an inbox memory past its TTL is gone for every reader at once, even
  before the expire job moves its file to the trash;
- not compressed: a turn that a summary already folds in is kept, but out of every
  read unless `include_compressed` asks for it.
Trashed memories are in no index at all. `as_of` asks for what was known at a past
moment instead of what is current: memories created by then, and facts still current
then (superseded later); what has expired by `now` stays out either way. Every other
field narrows further (all of them must hold; `tags`: every one).

A tool's filter is derived from its params (`of`): every params field whose name is a
field here is taken as is, so a filterable field is declared once, here, and a tool
takes it by having a params field of that name. Wire forms that need reading (the
inclusive `to` date, an `as_of` date or time) are read by the functions below, which
the params call.

The value is compiled twice: to SQL over the catalog (store/catalog_sql.py, `where`)
and to a mask over the corpus's columns (retrieval/columns.py, `mask`); and
read a memory at a time by `admits` where no index holds the memory (the trash, for
an export). A property test keeps all three selecting the same ids for any filter
over any store. Each refuses
what it cannot answer rather than answer it wrongly: the mask `source` (the corpus
keeps none), a keyword search `as_of` (the text index holds what is current only).
"""

from __future__ import annotations

import time
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from memoryd.schema import Memory


# The fields filtered by equality: each the memory's field, and the catalog's column, of
# that name (the SQL, the mask and `admits` each compile them in one loop).
EQUAL = ("phase", "category", "kind", "type", "session", "source")


class Filters(msgspec.Struct, kw_only=True):
    """`scopes=None` means every scope."""

    scopes: list[str] | None = None
    phase: str | None = None
    category: str | None = None
    kind: str | None = None
    type: str | None = None
    session: str | None = None
    source: str | None = None  # SQL and `admits` only: the corpus keeps no source
    tags: list[str] = []
    not_kind: str | None = None  # every kind but this one
    since: datetime | None = None  # created_at >= since
    until: datetime | None = None  # created_at < until
    include_compressed: bool = False
    as_of: float | None = None  # epoch seconds: what was known then
    now: float | None = None  # when liveness is judged (epoch seconds); None: the clock

    def at(self) -> float:
        """The moment expiry is judged at."""
        return time.time() if self.now is None else self.now

    def admits(self, memory: Memory) -> bool:
        """Whether the narrowing fields (all but liveness) hold for `memory`."""
        return ((self.scopes is None or memory.scope in self.scopes)
                and all(getattr(self, f) is None or getattr(self, f) == getattr(memory, f)
                        for f in EQUAL)
                and (self.not_kind is None or memory.kind != self.not_kind)
                and set(self.tags) <= set(memory.tags)
                and (self.since is None or memory.created_at >= self.since)
                and (self.until is None or memory.created_at < self.until))


def of(params: object, scopes: list[str] | None, **fixed: Any) -> Filters:
    """The filter a tool's params ask for, over the `scopes` the caller may read;
    `fixed` sets what the tool decides itself."""
    found = msgspec.convert(params, Filters, from_attributes=True)
    return msgspec.structs.replace(found, scopes=scopes, **fixed)


def day_start(day: date | None) -> datetime | None:
    """A `from` date: created on or after the start of that day (UTC)."""
    return None if day is None else datetime.combine(day, clock(), tzinfo=UTC)


def day_after(day: date | None) -> datetime | None:
    """A `to` date is inclusive: created before the next day (none after the last)."""
    if day is None or day >= date.max:
        return None
    return datetime.combine(day, clock(), tzinfo=UTC) + timedelta(days=1)


def moment(value: str | None) -> float | None:
    """An `as_of` as epoch seconds: a bare date means the end of that day, a time
    without a zone is UTC. ValueError when it is neither."""
    if value is None:
        return None
    parsed = datetime.fromisoformat(value)
    if len(value) == 10:  # YYYY-MM-DD: all of that day
        parsed += timedelta(days=1) - timedelta(microseconds=1)
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
