"""A turn whose background work fails is counted and tried again, and after the last
try settled as it stands: never left pending (with `stats.backlog` saying 0) until the
next restart."""

from __future__ import annotations

import trio.testing

from memoryd.engine.learning import TURN_RETRIES
from tests.rig import Rig


async def test_a_failed_turn_is_counted_retried_and_then_settled(
        tmp_path, mock_clock: trio.testing.MockClock):
    rig = Rig(tmp_path)
    try:
        await rig.start()
        turn = await rig.result("memory_remember", session="s1", role="user",
                                content="The harbour ferry leaves at noon on Sundays")
        path = next((tmp_path / "sessions" / "s1" / "turns").glob("*.md"))
        whole = path.read_bytes()
        aside = tmp_path / "elsewhere.md"
        aside.write_bytes(whole)
        path.unlink()
        path.symlink_to(aside)  # a link is never followed: the turn's work fails
        learning = rig.engine.learning
        await learning.drain()
        stats = await rig.result("stats")
        assert stats["backlog"] == 1, "still waiting, and said so"
        assert stats["failed_turns"] == {"retrying": 1, "given_up": 0}
        mock_clock.jump(TURN_RETRIES[0] + 1)
        await learning.drain()  # tried again: fails again
        assert (await rig.result("stats"))["failed_turns"]["retrying"] == 1
        path.unlink()
        path.write_bytes(whole)  # a file again
        mock_clock.jump(TURN_RETRIES[1] + 1)
        await learning.drain()
        stats = await rig.result("stats")
        assert stats["backlog"] == 0 and stats["failed_turns"]["retrying"] == 0
        read = await rig.result("memory_read", id=turn["id"])
        assert read["pending"] is False
    finally:
        rig.close()
