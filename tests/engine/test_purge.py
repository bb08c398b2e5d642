"""Purge over what a real root holds besides memories: a file too large to rewrite (a
log) and indexes of any size are searched, never read whole, never a crash; the large
file is left, listed as refused and as still holding the string."""

from __future__ import annotations

from tests.rig import Rig

TOKEN = "acme-int-" + "Q4pZ8mW2xR7c"


async def test_a_large_file_is_searched_and_listed_not_rewritten(tmp_path):
    rig = Rig(tmp_path / "root", {"git": {"enabled": False}})
    await rig.start()
    try:
        note = await rig.result("memory_write", content=f"the mirror uses {TOKEN}",
                                category="knowledge")
        log = rig.root / "logs" / "export.log"
        log.parent.mkdir(exist_ok=True)
        # 3 MB, the token across the first megabyte's end (a chunk's edge when searched)
        log.write_bytes(b"x" * ((1 << 20) - 5) + TOKEN.encode() + b"y" * (2 << 20))
        done = await rig.result("memory_purge", text=TOKEN)
        assert done["refused"] == ["logs/export.log"]
        assert done["remaining"] == ["logs/export.log"]
        assert done["files"]["memories"] == 1 and done["git"] is None
        read = await rig.result("memory_read", id=note["id"])
        assert read["content"] == "the mirror uses [PURGED]"
        assert TOKEN.encode() in log.read_bytes()  # left for the user
    finally:
        rig.close()
