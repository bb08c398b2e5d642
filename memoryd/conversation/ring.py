"""The L0 ring: the last turns of each session, in memory, in order.

Rebuilt from the files at start; each stored turn is appended. Readers re-check the
ids against the catalog, so a turn deleted or edited since is never served stale.
"""

from __future__ import annotations

from collections import deque

from memoryd.schema import Memory


class Ring:
    def __init__(self, size: int) -> None:
        self.size = size
        self._sessions: dict[str, deque[tuple[float, str, str]]] = {}

    def fill(self, turns: list[Memory]) -> None:
        """Start over from these turns (oldest first)."""
        self._sessions.clear()
        for turn in turns:
            self.add(turn)

    def add(self, turn: Memory) -> None:
        if turn.session is None:
            return
        ring = self._sessions.setdefault(turn.session, deque(maxlen=self.size))
        item = (turn.created_at.timestamp(), turn.id, turn.scope)
        if ring and item < ring[-1]:  # out of order (an imported past turn): re-sort
            ring.append(item)
            ordered = sorted(ring)[-self.size:]
            ring.clear()
            ring.extend(ordered)
        else:
            ring.append(item)

    def last(self, session: str, n: int, scopes: list[str] | None) -> list[str]:
        """Ids of the session's last `n` turns in these scopes (None: all), oldest first."""
        ring = self._sessions.get(session)
        if not ring or n <= 0:
            return []
        ids = [i for _, i, scope in ring if scopes is None or scope in scopes]
        return ids[-n:]

    def __len__(self) -> int:
        return sum(len(r) for r in self._sessions.values())
