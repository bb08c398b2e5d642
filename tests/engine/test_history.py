"""A memory's history from git, wherever its file is named: an ingested page keeps
its own name (`Meeting Notes.md`), which holds no id to find its commits by."""

from __future__ import annotations

import pytest

from memoryd.history.git import available
from tests.layout import file_of
from tests.rig import Rig

pytestmark = pytest.mark.skipif(not available(), reason="no git binary on this machine")


async def test_an_ingested_pages_git_history_is_found_under_its_own_name(tmp_path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "Meeting Notes.md").write_text("# Meeting Notes\n\nThe first agenda.\n")
    rig = Rig(tmp_path / "root")
    await rig.start()
    await rig.engine.git.start()
    try:
        await rig.result("memory_ingest", source="markdown", path=str(notes))
        (m,) = (await rig.result("memory_list"))["memories"]
        assert file_of(rig.root, m).name == "Meeting Notes.md"  # the page's own name
        await rig.engine.git.commit()
        (notes / "Meeting Notes.md").write_text("# Meeting Notes\n\nThe second agenda.\n")
        await rig.result("memory_ingest", source="markdown", path=str(notes))
        await rig.engine.git.commit()
        history = await rig.result("memory_history", id=m["id"])
        assert [(v["version"], [r["version"] for r in v["revisions"]])
                for v in history["versions"]] == [(1, [1]), (2, [2])]
        assert history["versions"][-1]["current"]
    finally:
        rig.close()
