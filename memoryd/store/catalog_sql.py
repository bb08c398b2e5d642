"""The catalog's queries compiled from values: the one filter (memoryd/filters.py) as a
WHERE clause, a search's words as an FTS5 match, and the rowids that order memories by
their creation second."""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

import msgspec
from msgspec.structs import replace

from memoryd.filters import EQUAL, Filters
from memoryd.lang.titles import titled
from memoryd.schema import Memory

# A memory's rowid orders it by its creation second: second * ROWID_SLOTS + n, n counting
# the memories of that second in the order they were indexed. FTS5 reads a match in
# rowid order and can stop, so a search walks its matches newest first and stops after
# one page (a common word used to be sorted whole: 25-45 ms at 130,000 memories).
ROWID_SLOTS = 1 << 30
# Seconds outside +-2**33 (before 1697, after 2242) share the edge seconds' rowids.
ROWID_SECONDS = 1 << 33
ID_CHUNK = 10_000  # ids per `IN (...)` query


_decode = msgspec.json.Decoder(Memory).decode


def decode(doc: bytes | str) -> Memory:
    """A memory's `doc` column (one stored before titles has its title derived)."""
    return titled(_decode(doc))


def keys_only(filters: Filters) -> bool:
    """Only scope and dates, of what is live by default: what the narrow search_keys
    rows can answer alone."""
    return (not filters.tags and not filters.include_compressed and filters.as_of is None
            and all(getattr(filters, c) is None for c in (
                "phase", "category", "kind", "type", "session", "source", "not_kind")))


# The expired memories (a few: the expire job trashes them hourly), by the partial index,
# and its converse on a memories row: both take the moment expiry is judged at.
EXPIRED = "SELECT rowid FROM memories WHERE expires_at <= ?"
UNEXPIRED = "(m.expires_at IS NULL OR m.expires_at > ?)"


def where(filters: Filters, table: str = "m", rowid: str | None = None
          ) -> tuple[list[str], list[object]]:
    """`filters` as SQL conditions on the memories table (`m`), or on search_keys (`k`,
    for `keys_only` filters: its rows are the live ones but for expiry, which is tested
    on `rowid`, by default the table's own)."""
    clauses: list[str] = []
    args: list[object] = []
    now = filters.at()
    if table == "m":
        if filters.as_of is None:
            clauses.append("m.superseded_at IS NULL")
        else:
            clauses += ["m.created_at <= ?", "(m.superseded_at IS NULL OR m.superseded_at > ?)"]
            args += [filters.as_of, filters.as_of]
        clauses.append(UNEXPIRED)
        args.append(now)
        if not filters.include_compressed:
            clauses.append("m.compressed = 0")
    else:
        clauses.append(f"{rowid or f'{table}.rowid'} NOT IN ({EXPIRED})")
        args.append(now)
    if filters.scopes is not None:
        clauses.append(f"{table}.scope IN ({','.join('?' * len(filters.scopes))})")
        args.extend(filters.scopes)
    for column in EQUAL:
        value = getattr(filters, column)
        if value is not None:
            clauses.append(f"m.{column} = ?")
            args.append(value)
    if filters.not_kind is not None:
        clauses.append("m.kind != ?")
        args.append(filters.not_kind)
    for tag in filters.tags:
        clauses.append("EXISTS (SELECT 1 FROM tags t WHERE t.mem = m.rowid AND t.tag = ?)")
        args.append(tag)
    if filters.since is not None:
        clauses.append(f"{table}.created_at >= ?")
        args.append(filters.since.timestamp())
    if filters.until is not None:
        clauses.append(f"{table}.created_at < ?")
        args.append(filters.until.timestamp())
    return clauses, args


# The characters the word index takes one at a time, each a word of its own.
CJK_CHAR = "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]"
CJK = re.compile(f"({CJK_CHAR})")


def spaced(text: str) -> str:
    """What the word index reads: CJK characters apart, each a word of its own."""
    return CJK.sub(r" \1 ", text)


def quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


@dataclass
class Match:
    """Which rows a search text matches: conditions on one FTS5 table's rows.

    Every whitespace-separated term must occur (AND), as a case-insensitive substring.
    Terms are quoted, so FTS syntax in a query is just text. Terms of 3 characters or
    more use the trigram index. Shorter ones (a number, a two-letter word, one CJK
    character) use the word index, which finds them at the start of a word (a CJK
    character anywhere). That is the whole test for ASCII letters and digits and for
    one CJK character; for the rest (`c#`, `é`, two CJK characters) LIKE confirms the
    substring on those rows only. A short term with no letter or digit at all ("+") is
    tested with LIKE alone, a scan.
    """

    table: str  # "fts" or "words": the index the match walks, in rowid order
    where: list[str]
    args: list[object]

    @classmethod
    def of(cls, query: str) -> Match:
        long_terms: list[str] = []
        short_terms: list[str] = []
        for term in query.split():
            (long_terms if len(term) >= 3 else short_terms).append(term)
        where: list[str] = []
        args: list[object] = []
        if long_terms:
            where.append("fts MATCH ?")
            args.append(" AND ".join(quoted(t) for t in long_terms))
        words = [w for t in short_terms if (w := re.findall(r"[^\W_]+", spaced(t)))]
        confirm = [t for t in short_terms if not WHOLE_WORD.fullmatch(t)]
        prefixes = " AND ".join(quoted(" ".join(w)) + " *" for w in words)
        if words and not long_terms and not confirm:
            return cls("words", ["words MATCH ?"], [prefixes])
        if words:  # the word index finds the rows, FTS5 reads them by rowid
            # `+`: a filter on the walk, not a list of rowids to look up and then sort
            where.append("+fts.rowid IN (SELECT rowid FROM words WHERE words MATCH ?)")
            args.append(prefixes)
        for term in confirm:
            where.append("(fts.content LIKE ? ESCAPE '\\' OR fts.tags LIKE ? ESCAPE '\\')")
            args.extend([like(term), like(term)])
        return cls("fts", where or ["1"], args)


# A short term that the word index alone decides: ASCII letters and digits (folded alike
# by the index and by LIKE), or one CJK character (a word of its own there).
WHOLE_WORD = re.compile(f"[A-Za-z0-9]+|{CJK_CHAR}")


def rowid_second(created_at: float) -> int:
    """The creation second a rowid is numbered from (the edge seconds beyond the range)."""
    return min(max(math.floor(created_at), -ROWID_SECONDS), ROWID_SECONDS - 1)


def rowid_bounds(table: str, filters: Filters) -> tuple[list[str], list[object], Filters]:
    """The rowid range a date filter allows (FTS5 then reads only that part of a match),
    and the filters left to test: a date on a whole second (a tool's `from`/`to`) is
    the rowid bound itself."""
    clauses: list[str] = []
    args: list[object] = []
    rest = filters
    if filters.since is not None:
        since = filters.since.timestamp()
        clauses.append(f"{table}.rowid >= ?")
        args.append(rowid_second(since) * ROWID_SLOTS)
        if rowid_second(since) == since:
            rest = replace(rest, since=None)
    if filters.until is not None:  # created_at < until: the second before its ceiling
        last = math.ceil(filters.until.timestamp()) - 1
        clauses.append(f"{table}.rowid <= ?")  # the end of the last second: in range
        args.append((rowid_second(last) + 1) * ROWID_SLOTS - 1)
        if rowid_second(last) == last == filters.until.timestamp() - 1:
            rest = replace(rest, until=None)
    return clauses, args, rest


def newest(rows: Iterable[tuple[int, float]], count: int) -> list[int]:
    """The `count` newest of `rows` (rowid, created_at), which come by rowid, descending:
    every row of a second is read before the rows of earlier seconds, so the first
    `count` rows and the rest of the last one's second hold the newest `count`."""
    taken: list[tuple[float, int]] = []
    for rowid, created_at in rows:
        if len(taken) >= count and (not taken or rowid // ROWID_SLOTS
                                    != taken[-1][1] // ROWID_SLOTS):
            break
        taken.append((created_at, rowid))
    taken.sort(reverse=True)
    return [rowid for _, rowid in taken[:count]]


def by_ids(conn: sqlite3.Connection, ids: list[str]) -> list[Memory]:
    """Memories by id, in chunks (SQLite takes at most 32,766 parameters a statement)."""
    out: list[Memory] = []
    for start in range(0, len(ids), ID_CHUNK):
        chunk = ids[start:start + ID_CHUNK]
        rows = conn.execute(
            f"SELECT doc FROM memories WHERE id IN ({','.join('?' * len(chunk))})", chunk)
        out.extend(decode(r[0]) for r in rows)
    return out


def paths_by_ids(conn: sqlite3.Connection, ids: Iterable[str]) -> dict[str, str]:
    """Each of these memories' file path, where the catalog has it (in chunks)."""
    wanted = list(dict.fromkeys(ids))
    found: dict[str, str] = {}
    for start in range(0, len(wanted), ID_CHUNK):
        chunk = wanted[start:start + ID_CHUNK]
        found.update(conn.execute(
            f"SELECT id, path FROM memories WHERE id IN ({','.join('?' * len(chunk))})",
            chunk).fetchall())
    return found


def like(term: str) -> str:
    """A LIKE pattern (ESCAPE '\\') matching `term` anywhere."""
    return f"%{like_escaped(term)}%"


def like_escaped(term: str) -> str:
    """`term` as LIKE (ESCAPE '\\') reads it literally: no wildcard in it counts."""
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
