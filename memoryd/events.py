"""EventBus: fan-out of `notifications/*` to connections that subscribed.

Publishing never blocks the engine: a subscriber whose queue is full misses the
event (and the drop is counted), it does not slow a write down.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

QUEUE_SIZE = 256


class Subscription:
    def __init__(self, can_see: Callable[[str], bool]) -> None:
        self.can_see = can_see
        self.send, self.receive = trio.open_memory_channel[tuple[str, dict[str, Any]]](QUEUE_SIZE)
        self.dropped = 0


class EventBus:
    def __init__(self) -> None:
        self._subs: set[Subscription] = set()
        self._dropped_gone = 0  # what subscriptions that ended had missed

    def subscribe(self, can_see: Callable[[str], bool]) -> Subscription:
        sub = Subscription(can_see)
        self._subs.add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        if sub in self._subs:
            self._subs.discard(sub)
            self._dropped_gone += sub.dropped
        sub.send.close()

    def publish(self, method: str, params: dict[str, Any], scope: str | None = None) -> None:
        for sub in list(self._subs):
            if scope is not None and not sub.can_see(scope):
                continue
            try:
                sub.send.send_nowait((method, params))
            except trio.WouldBlock:
                sub.dropped += 1
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                self._subs.discard(sub)
                self._dropped_gone += sub.dropped

    @property
    def subscribers(self) -> int:
        return len(self._subs)

    @property
    def dropped(self) -> int:
        """Events that subscribers missed because their queue was full, since start."""
        return self._dropped_gone + sum(sub.dropped for sub in self._subs)
