"""One rule for ids, wherever one comes in: never `..` (an id becomes part of a path),
so a tool's params, an imported line and a file's front matter agree."""

from __future__ import annotations

import json

import msgspec
import pytest

from memoryd.errors import InvalidParams
from memoryd.schema import SourcePath, is_valid_id, source_path_problem
from tests.rig import Rig


@pytest.mark.parametrize("value", ["a..b", "..", "x..", "a.b..c", "a\n", ".hidden", "-x",
                                   "a/b", "x" * 129])
def test_an_id_that_could_climb_or_hide_is_never_valid(value):
    assert not is_valid_id(value)


@pytest.mark.parametrize("value", ["a.b", "summary-0f3e", "00000000-0000-4000-8000-0"])
def test_ordinary_ids_are(value):
    assert is_valid_id(value)


async def test_every_way_in_refuses_it(tmp_path):
    (tmp_path / "categories" / "knowledge").mkdir(parents=True)
    (tmp_path / "categories" / "knowledge" / "notes..draft.md").write_text("by hand\n")
    rig = Rig(tmp_path)
    try:
        await rig.start()
        imported = await rig.result("memory_import", lines=[
            json.dumps({"id": "a..b", "content": "climbing"})])
        assert imported["imported"] == 0 and "id" in imported["failed"][0]["reason"]
        read = await rig.error("memory_read", id="a..b")
        assert read["code"] == InvalidParams.code
        (by_hand,) = (await rig.result("memory_list"))["memories"]
        assert by_hand["content"] == "by hand" and ".." not in by_hand["id"]
    finally:
        rig.close()


@pytest.mark.parametrize("value", ["notes/a.md", "a\nb.md", "a\rb", "nul\x00", "caf\udce9.md",
                                   "x" * 1024, "x" * 1025, "", "día/ünïcode.md"])
def test_the_reasons_an_ingest_reports_for_a_path_are_the_schemas_rules(value):
    """An ingest names why it skipped a file by `source_path_problem`; it must refuse
    exactly what the schema's SourcePath refuses."""
    try:
        msgspec.convert(value, SourcePath)
        valid = True
    except msgspec.ValidationError:
        valid = False
    assert (source_path_problem(value) is None) == valid
