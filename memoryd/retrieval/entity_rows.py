"""EntityRows: each entity key (lang/names.py) -> the corpus rows that name it,
and those that may (a weak mention: it counts for a key some row names), and the
words of multi-word names, for aliases; and each scope's speakers (the names turns
open with). Built as rows are put; made again from the rows' metadata after a
compaction or a snapshot load (row numbers change)."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable

import numpy as np

from memoryd.lang.names import QueryWords, in_query
from memoryd.retrieval.columns import RowMeta


class EntityRows:
    def __init__(self) -> None:
        self._rows: dict[str, array[int]] = {}  # ascending (put appends rows)
        self._weak: dict[str, array[int]] = {}
        self._by_word: dict[str, set[str]] = {}  # first/last word -> multi-word keys
        # scope -> its speakers' keys. Replaced whole, never changed in place, so a
        # search reads it without the corpus's hold (before it embeds the query).
        self._speakers: dict[str, frozenset[str]] = {}

    def nbytes(self) -> int:
        """The bytes its row lists hold (4 a row)."""
        return 4 * sum(sum(map(len, held.values())) for held in (self._rows, self._weak))

    def add(self, row: int, meta: RowMeta) -> None:
        """Row `row`'s entities, its weak mentions and its speaker."""
        for key in meta.weak:
            self._weak.setdefault(key, array("i")).append(row)
        if meta.speaker and meta.speaker not in self._speakers.get(meta.scope, ()):
            known = self._speakers.get(meta.scope, frozenset())
            self._speakers = {**self._speakers, meta.scope: known | {meta.speaker}}
        for key in meta.entities:
            self._rows.setdefault(key, array("i")).append(row)
            words = key.split(" ")
            if len(words) > 1:
                for word in {words[0], words[-1]}:
                    self._by_word.setdefault(word, set()).add(key)

    def rebuild(self, metas: list[RowMeta | None]) -> None:
        self._rows, self._weak, self._by_word, self._speakers = {}, {}, {}, {}
        for row, meta in enumerate(metas):
            if meta is not None and (meta.entities or meta.weak):
                self.add(row, meta)

    def speakers(self, scopes: Iterable[str] | None) -> frozenset[str]:
        """The speakers of turns in `scopes` (None: every scope). Safe from any thread,
        without the corpus's hold."""
        known = self._speakers  # one read: a writer replaces the dict, never edits it
        chosen = known.values() if scopes is None else (known.get(s) for s in scopes)
        return frozenset().union(*(s for s in chosen if s))

    def count(self, key: str) -> int:
        """Rows naming `key`, dead ones until the next compaction included."""
        found = self._rows.get(key)
        return len(found) if found is not None else 0

    def count_within(self, key: str, keep: Callable[[np.ndarray], np.ndarray]) -> int:
        """Rows naming `key` that `keep` (a mask's test of rows) admits."""
        found = self._rows.get(key)
        if not found:
            return 0
        return int(np.count_nonzero(keep(np.frombuffer(found, dtype=np.int32))))

    def in_query(self, query: str | QueryWords, keep: Callable[[np.ndarray], np.ndarray]
                 ) -> list[tuple[str, ...]]:
        """The keys a query names that rows `keep` (a mask's test of rows) admits name,
        each with the multi-word names a single word is the first or last word of
        ("Ann" -> "Ann", "Ann Smith"): an alias resolved among the names the rows
        searched hold, so what other scopes name changes nothing. One entity of the
        query, one group."""
        return [(key, *(sorted(n for n in self._by_word.get(key, ()) if self._has(n, keep))
                        if " " not in key else ()))
                for key in in_query(query, lambda k: self._named(k, keep))]

    def _has(self, key: str, keep: Callable[[np.ndarray], np.ndarray]) -> bool:
        """Some row `keep` admits names `key` outright."""
        found = self._rows.get(key)
        return found is not None and bool(keep(np.frombuffer(found, dtype=np.int32)).any())

    def _named(self, key: str, keep: Callable[[np.ndarray], np.ndarray]) -> bool:
        """Some row `keep` admits names `key` outright, or it is a word of a longer name
        one does."""
        return self._has(key, keep) or any(self._has(n, keep)
                                           for n in self._by_word.get(key, ()))

    def rows(self, keys: Iterable[str], keep: Callable[[np.ndarray], np.ndarray]
             ) -> np.ndarray:
        """The rows naming any of `keys` (weakly too, where it is a name among the rows
        `keep` admits: `_named`), ascending, those `keep` (a mask's test of rows)
        admits."""
        parts = [np.frombuffer(found, dtype=np.int32) for k in keys if self._named(k, keep)
                 for found in (self._rows.get(k), self._weak.get(k)) if found]
        if not parts:
            return np.zeros(0, dtype=np.int64)
        rows = np.unique(np.concatenate(parts)).astype(np.int64)
        kept: np.ndarray = rows[keep(rows)]
        return kept
