"""Every tool's result matches the outputSchema it declares (MCP clients check
structuredContent against it), on a rig driven through the dispatcher."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import msgspec
import pytest

from memoryd.tools.outputs import outputs
from memoryd.tools.registry import handlers
from memoryd.tools.results import RESULTS
from memoryd.tools.spec import SPECS
from tests.engine.test_remote import bare, machine


def test_every_tool_declares_an_object_schema():
    assert set(outputs()) == set(SPECS)
    for name, schema in outputs().items():
        assert schema["type"] == "object", name
        jsonschema.Draft202012Validator.check_schema(schema)


async def _results(rig, tmp_path: Path) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {name: [] for name in SPECS}

    async def call(tool: str, **params) -> dict:
        result = await rig.result(tool, **params)
        out[tool].append(result)
        return result

    a = await call("memory_write", content="Ann likes green tea", category="people",
                   tags=["ann"])
    await call("memory_write", content="Ann likes green tea", category="people")  # duplicate
    b = await call("memory_write", content="Bob climbs on Sundays")
    await call("memory_read", id=a["id"][:8])  # a prefix is taken for the id
    await call("memory_update", id=a["id"], content="Ann loves green tea")
    await call("memory_tag", id=a["id"], add=["tea"])
    await call("memory_link", source=a["id"], target=b["id"])
    await call("memory_backlinks", id=b["id"])
    await call("memory_entities")
    await call("memory_entities", name="ann")
    await call("memory_unlink", source=a["id"], target=b["id"])
    await call("memory_upgrade", id=b["id"])
    await call("memory_rename", id=b["id"], title="Renamed")
    await call("memory_list")
    await call("memory_search", query="tea")
    await call("memory_smart_search", query="what does Ann drink")
    await call("memory_explain", query="what does Ann drink")
    await call("memory_recall", query="what does Ann drink", session="s1")
    await call("memory_context")
    await call("memory_remember", session="s1", role="user",
               content="I moved to Lisbon last spring and I love it there")
    await call("memory_remember", session="s1", role="user", content="ok")  # skipped
    await call("memory_add", text="My sister Ana lives in Porto.")
    await call("memory_history", id=a["id"])
    await call("memory_delete", id=b["id"])
    await call("memory_trash")
    await call("memory_restore", id=b["id"][:8])
    await call("memory_remind", content="call Ann", when="tomorrow at 9")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "one.md").write_text("# One\n\nA note that links [[two]].\n")
    await call("memory_ingest", source="markdown", path=str(notes))
    page = await call("memory_export")
    await call("memory_import", lines=[*page["lines"][:1], "{not json"])
    synced = await machine(tmp_path, "synced", bare(tmp_path))  # sync needs a remote
    try:
        await synced.result("memory_write", content="to be sent")
        out["memory_sync"] += [await synced.result("memory_sync", dry_run=True),
                               await synced.result("memory_sync")]
        out["memory_purge"] += [await synced.result("memory_purge", text="to be sent",
                                                    dry_run=True),
                                await synced.result("memory_purge", text="to be sent")]
    finally:
        synced.close()
    return out


async def test_every_tool_result_matches_its_output_schema(rig, tmp_path: Path):
    results = await _results(rig, tmp_path)
    missing = [name for name, got in results.items() if not got and name != "memory_restore"]
    assert not missing, f"tools not exercised: {missing}"
    for name, got in results.items():
        for result in got:
            try:
                jsonschema.validate(result, outputs()[name])
            except jsonschema.ValidationError as exc:
                pytest.fail(f"{name}: {exc.message} at {list(exc.absolute_path)}")
            msgspec.convert(result, RESULTS[name])  # the wire reads back as its Struct
    assert results["memory_write"][1]["duplicate"] is True
    assert results["memory_write"][0]["duplicate"] is False
    assert results["memory_restore"][0]["restored_from"] is None
    assert results["memory_trash"][0]["total"] == 1


def test_each_handler_returns_the_struct_its_tool_declares():
    """The type checker holds each handler to its annotation; this holds the annotation
    to the table the schema is generated from."""
    assert set(RESULTS) == set(SPECS)
    for name, (fn, _, _) in handlers().items():
        declared = fn.__annotations__["return"]  # as written (the engine is a hint only)
        assert declared == RESULTS[name].__name__, (name, declared)
