"""Stores: the files and every index derived from them, and the runner that takes
each change through a UnitOfWork in the writer thread, then publishes its events."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from memoryd.access_counts import AccessCounts
from memoryd.engine.unit import UnitOfWork
from memoryd.engine.workers import Workers
from memoryd.events import EventBus
from memoryd.retrieval.hybrid import HybridIndex
from memoryd.schema import Memory
from memoryd.secrets.redact import Redactor
from memoryd.store.catalog import Catalog
from memoryd.store.files import MarkdownStore

T = TypeVar("T")


@dataclass
class Stores:
    files: MarkdownStore
    catalog: Catalog
    hybrid: HybridIndex
    access_counts: AccessCounts
    events: EventBus
    workers: Workers
    # Every text given to be written is cleaned of secrets by it first (secrets/).
    redactor: Redactor = field(default_factory=Redactor)
    # Called (trio thread) after each committed change with the files it touched: the
    # git history marks itself dirty.
    on_change: list[Callable[[set[str]], None]] = field(default_factory=list)

    def unit(self, vectors: bool = True, defer_vectors: bool = False) -> UnitOfWork:
        return UnitOfWork(self.files, self.catalog, self.hybrid, self.access_counts,
                          self.redactor, vectors, defer_vectors)

    async def change(self, fn: Callable[[UnitOfWork], T], *, vectors: bool = True,
                     abandon: bool = False, defer_vectors: bool = False,
                     staged: Sequence[Memory] = ()) -> T:
        """Run `fn` on a fresh unit in the writer thread, commit it, publish its events.
        `staged`: the new memories the unit will write, known before it runs: their
        embedding starts now, while the unit waits for the writer, not at its commit."""
        if vectors and staged:
            self.hybrid.embed_ahead(list(staged))

        def run() -> tuple[T, UnitOfWork]:
            uow = self.unit(vectors, defer_vectors)
            uow.staged = {m.id for m in staged}
            result = fn(uow)
            uow.commit()
            return result, uow

        result, uow = await self.workers.write(run, abandon=abandon)
        self.publish(uow)
        return result

    def publish(self, uow: UnitOfWork) -> None:
        for hook in self.on_change:
            hook(uow.touched)
        for method, params, scope in uow.events:
            self.events.publish(method, params, scope)
