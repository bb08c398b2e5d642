"""memory_list in each order it offers, over the same filter."""

from __future__ import annotations


async def test_the_list_in_each_order(rig):
    ids = []
    for n in range(4):
        m = await rig.result("memory_write", content=f"note {n}", category="knowledge",
                             created_at=f"2026-01-0{n + 1}T00:00:00Z")
        ids.append(m["id"])
    await rig.result("memory_update", id=ids[1], content="note 1, edited")
    for _ in range(3):
        await rig.result("memory_read", id=ids[2])
    await rig.engine.writes.flush_access_counts()  # the column the order reads

    async def listed(**params) -> list[str]:
        got = await rig.result("memory_list", category="knowledge", **params)
        return [m["id"] for m in got["memories"]]

    assert await listed() == ids[::-1]
    assert await listed(order="oldest") == ids
    assert (await listed(order="updated"))[0] == ids[1]
    assert (await listed(order="accessed"))[0] == ids[2]
    assert await listed(order="oldest", limit=2, offset=1) == ids[1:3]
    assert (await rig.error("memory_list", order="random"))["code"] == -32602
