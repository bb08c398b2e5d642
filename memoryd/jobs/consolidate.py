"""consolidate: merge duplicate memories, then refresh memory.md.

Duplicates, within one scope and one kind (never conversation turns):
- the same text once normalised (case, white space, punctuation): memories are
  bucketed by their first 100 normalised characters, but only an equal whole
  text merges, so a shared prefix alone never does;
- near-identical embeddings (cosine >= 0.95) *with the same content words*
  (stems): MiniLM puts "Meeting on Tuesday" and "Meeting on Wednesday" at 0.99,
  and those are different facts.
The most-accessed memory of a group is kept (the oldest on a tie); tags, links
and access counts are unioned into it; the rest go to the trash with
`replaced_by`.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from datetime import datetime

import numpy as np
import trio

from memoryd.jobs import memory_index
from memoryd.jobs.needs import JobEngine
from memoryd.jobs.report import Change
from memoryd.lang import terms
from memoryd.schema import Memory

COSINE = 0.95
PREFIX = 100
BLOCK = 512
_PUNCT = re.compile(r"[^\w\s]")


def normalise(content: str) -> str:
    folded = _PUNCT.sub("", unicodedata.normalize("NFKC", content).casefold())
    return " ".join(folded.split())


class _Groups:
    """Union-find over memory ids."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def join(self, a: str, b: str) -> None:
        self.parent[self.find(a)] = self.find(b)

    def groups(self) -> list[list[str]]:
        out: dict[str, list[str]] = defaultdict(list)
        for x in self.parent:
            out[self.find(x)].append(x)
        return [g for g in out.values() if len(g) > 1]


def find_duplicates(notes: list[Memory], vectors: dict[str, np.ndarray]) -> list[list[str]]:
    found = _Groups()
    by_scope: dict[tuple[str, str], list[Memory]] = defaultdict(list)
    for memory in notes:  # a reminder never merges with the note it came from
        if memory.replaced_by is None:
            by_scope[(memory.scope, memory.kind)].append(memory)
    for members in by_scope.values():
        buckets: dict[str, dict[str, str]] = defaultdict(dict)
        for memory in members:
            norm = normalise(memory.content)
            same = buckets[norm[:PREFIX]]
            if norm in same:  # the whole text, not just the bucket's prefix
                found.join(memory.id, same[norm])
            else:
                same[norm] = memory.id
        have = [m for m in members if m.id in vectors]
        if len(have) < 2:
            continue
        matrix = np.stack([vectors[m.id] for m in have])
        stems = [frozenset(terms.terms(m.content)) for m in have]
        for start in range(0, len(have), BLOCK):
            sims = matrix[start:start + BLOCK] @ matrix.T
            for i, j in zip(*np.nonzero(sims >= COSINE), strict=True):
                a, b = start + int(i), int(j)
                if a < b and stems[a] == stems[b]:
                    found.join(have[a].id, have[b].id)
    return found.groups()


async def run(engine: JobEngine, now: datetime, dry_run: bool) -> list[Change]:
    notes = await engine.reads.notes()
    vectors = await engine.reads.vectors([m.id for m in notes])
    groups = await trio.to_thread.run_sync(find_duplicates, notes, vectors)
    by_id = {m.id: m for m in notes}
    changes = []
    for group in groups:
        members = sorted((by_id[i] for i in group),
                         key=lambda m: (-m.access_count, m.created_at, m.id))
        keep, others = members[0], members[1:]
        if not dry_run:
            await engine.links.merge(keep.id, [m.id for m in others])
        for other in others:
            changes.append(Change(id=other.id, action="merge", after={"replaced_by": keep.id},
                                  before={"content": other.content[:200]}))
    if not dry_run:
        await memory_index.refresh(engine, now)
    return changes
