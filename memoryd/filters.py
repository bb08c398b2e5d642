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

The value is compiled twice: to SQL over the catalog (store/catalog.py, `where`) and
to a mask over the corpus's columns (retrieval/corpus.py, `Corpus.mask`). A property
test keeps the two selecting the same ids for any filter over any store. Each refuses
what it cannot answer rather than answer it wrongly: the mask `source` (the corpus
keeps none), a keyword search `as_of` (the text index holds what is current only).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class Filters:
    """`scopes=None` means every scope."""

    scopes: Sequence[str] | None = None
    phase: str | None = None
    category: str | None = None
    kind: str | None = None
    type: str | None = None
    session: str | None = None
    source: str | None = None  # SQL only: the corpus keeps no source
    tags: Sequence[str] = field(default_factory=tuple)
    not_kind: str | None = None  # every kind but this one
    since: datetime | None = None  # created_at >= since
    until: datetime | None = None  # created_at < until
    include_compressed: bool = False
    as_of: float | None = None  # epoch seconds: what was known then
    now: float | None = None  # when liveness is judged (epoch seconds); None: the clock

    def at(self) -> float:
        """The moment expiry is judged at."""
        return time.time() if self.now is None else self.now
