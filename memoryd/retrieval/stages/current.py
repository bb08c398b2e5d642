"""Current: of two facts about the same thing (the same subject and attribute, the
frame `conversation.frames.key_of` reads), the newer ranks above the older.

Reconciliation supersedes a fact when it can tell a change from an addition; when it
cannot, it keeps both (no fact is lost), and this stage makes sure the current value
still comes first for a question about the present. A question about the past ("did",
"used to", "before", "in 2019": `Query.about_past`) or one asked `as_of` a time is left
as it ranked."""

from __future__ import annotations

from collections.abc import Callable

from memoryd.lang.frames import changes, key_of
from memoryd.retrieval.candidates import Candidate, Ranking
from memoryd.schema import Memory


class Current:
    name = "current"

    def __init__(self, fetch: Callable[[list[str]], list[Memory]]) -> None:
        self.fetch = fetch  # ids -> memories: the facts' texts and kinds

    def run(self, ranking: Ranking) -> None:
        if ranking.query.about_past or len(ranking.candidates) < 2:
            return
        memories = ranking.memories(self.fetch)
        framed: list[tuple[Candidate, float, tuple[str, str], tuple[str, str] | None]] = []
        for i, c in enumerate(ranking.candidates):
            memory = memories.get(c.id)
            if memory is None or memory.kind != "fact":
                continue
            own = key_of(memory.content, changes(memory.content))
            either = key_of(memory.content, True)  # as a later, cued fact reads it
            if either is not None:
                framed.append((c, float(ranking.created[i]), either[0],
                               own[0] if own else None))
        for newer, at, _, frame in framed:
            if frame is None:
                continue
            for older, then, theirs, _ in framed:
                if older is not newer and then < at and theirs == frame \
                        and older.score >= newer.score:
                    # just below the newer: still shown, never above it
                    older.staged[self.name] = round(newer.score - older.score, 4) - 1e-4
                    older.score = newer.score - 1e-4
