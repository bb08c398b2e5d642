"""Current: the newer of two things about the same matter ranks above the older, for a
question about the present.

Two rules, each of which puts the newer just above the older (still shown, never
below it by more than a hair):

- **Frames.** Of two facts with the same subject and attribute (the frame
  `lang.frames.key_of` reads), the newer. Reconciliation supersedes a fact when it can
  tell a change from an addition; when it cannot, it keeps both (no fact is lost).
- **Said later.** A question that asks for one value holding now, of the one asking
  (`Query.one_now`, lang/asking.py: "How old am I?", "What car do I drive?"), has one
  right answer at a time. Of two things the asker said (their turns, the facts learned
  from them) among the best few, about the same matter (their vectors close) and
  nearly as relevant, the later is the answer, whatever words announced the change
  ("turned 35", "traded the Corolla in"): no rule that recognises a change is needed.
  A change is told in a later conversation: two turns of one session are one telling,
  where the later turn is the conversation going on, not a change. A question for
  several values, to confirm a statement, or about another's doing is left alone:
  there a later statement is one more answer.

A question about the past ("did", "used to", "before", "in 2019": `Query.about_past`),
one that names a date, or one asked `as_of` a time is left as it ranked."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from memoryd.lang.frames import changes, key_of
from memoryd.retrieval.candidates import Candidate, Ranking
from memoryd.retrieval.stages.entities import said_by_the_user
from memoryd.schema import Memory

# Said later: among the best TOP, the newer scoring at least NEARLY the older's, and
# their own vectors at least SAME alike: one matter, told two ways. A change is often
# said without the question's words ("Honestly these days nothing beats Khruangbin"
# for "What's my favourite band?"), so the newer's own relevance may be a third of the
# older's; the question's guard (one value, now, of the asker) is what keeps a second
# answer from being taken for a change. The rule only reorders what is shown near the
# top; it brings nothing up from below, nor back what the relevance floor dropped.
TOP = 8
NEARLY = 0.3
SAME = 0.4


class Current:
    name = "current"

    def __init__(self, fetch: Callable[[list[str]], list[Memory]]) -> None:
        self.fetch = fetch  # ids -> memories: the facts' texts and kinds

    def run(self, ranking: Ranking) -> None:
        if ranking.query.about_past or len(ranking.candidates) < 2:
            return
        memories = ranking.memories(self.fetch)
        self._frames(ranking, memories)
        if ranking.query.window is None and ranking.query.one_now:
            self._said_later(ranking, memories)

    def _frames(self, ranking: Ranking, memories: dict[str, Memory]) -> None:
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
                    self._below(older, newer)

    def _said_later(self, ranking: Ranking, memories: dict[str, Memory]) -> None:
        best = sorted(range(len(ranking.candidates)),
                      key=lambda i: -ranking.candidates[i].score)[:TOP]
        said = [i for i in best if not ranking.candidates[i].reason  # dropped stays so
                and said_by_the_user(memories.get(ranking.candidates[i].id))]
        # the newest first: each, once raised, stays above the older ones it outranks
        for n in sorted(said, key=lambda i: -float(ranking.created[i])):
            newer = ranking.candidates[n]
            session = memories[newer.id].session
            over = [ranking.candidates[o] for o in said
                    if float(ranking.created[o]) < float(ranking.created[n])
                    and (session is None or memories[ranking.candidates[o].id].session
                         != session)
                    and ranking.candidates[o].score >= newer.score
                    and newer.score >= NEARLY * ranking.candidates[o].score
                    and float(np.dot(ranking.vectors[o], ranking.vectors[n])) >= SAME]
            if over:
                top = max(over, key=lambda c: c.score)
                raised = top.score + 1e-4
                newer.staged[self.name] = round(raised - newer.score, 4)
                newer.score = raised

    def _below(self, older: Candidate, newer: Candidate) -> None:
        # just below the newer: still shown, never above it
        older.staged[self.name] = round(newer.score - older.score, 4) - 1e-4
        older.score = newer.score - 1e-4

