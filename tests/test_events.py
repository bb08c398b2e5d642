"""The event bus: a full subscriber misses events (counted, never a blocked write), and
the count outlives the subscription."""

from __future__ import annotations

from memoryd.events import QUEUE_SIZE, EventBus


async def test_a_full_subscriber_misses_events_and_the_bus_counts_them():
    bus = EventBus()
    slow = bus.subscribe(lambda scope: True)
    blind = bus.subscribe(lambda scope: scope == "global")
    for i in range(QUEUE_SIZE + 3):
        bus.publish("notifications/memory", {"n": i}, scope="agent:a")
    assert (slow.dropped, blind.dropped, bus.dropped) == (3, 0, 3)
    assert blind.receive.statistics().current_buffer_used == 0, "not its scope"
    bus.unsubscribe(slow)
    bus.unsubscribe(slow)  # twice: counted once
    assert bus.subscribers == 1 and bus.dropped == 3
    first = slow.receive.receive_nowait()
    assert first == ("notifications/memory", {"n": 0}), "what fitted was kept, in order"
