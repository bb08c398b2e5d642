"""Links an editor understands: each file lists its links as [[file name]]
(`wikilinks`, from the ids in `links`), kept right when a target is renamed or deleted;
a [[link]] written in a note's text by hand becomes a link both ways."""

from __future__ import annotations

import pytest

from memoryd.store import frontmatter
from tests.ingest.test_sources import LOGSEQ_DOCS
from tests.layout import file_of, relpath_of


def _wikilinks(path) -> list[str]:
    text = path.read_text()
    head = text.split("---\n")[1]
    return [line[2:].strip("'\"") for line in head.splitlines()[
        head.splitlines().index("wikilinks:") + 1:] if line.startswith("- ")] \
        if "wikilinks:" in head else []


async def test_links_are_written_as_file_names_and_follow_renames_and_deletes(rig):
    ann = await rig.result("memory_write", content="# Ann Smith\n\nBakery.", category="people")
    shop = await rig.result("memory_write", content="# The bakery\n\nOn Elm St.",
                            category="knowledge")
    await rig.result("memory_link", source=ann["id"], target=shop["id"])
    ann_file, shop_file = file_of(rig.root, ann), file_of(rig.root, shop)
    assert _wikilinks(ann_file) == [f"[[{shop_file.stem}]]"]
    assert _wikilinks(shop_file) == [f"[[{ann_file.stem}]]"]
    parsed = frontmatter.parse(ann_file.read_text(), "x")
    assert parsed.memory.links == [shop["id"]] and "wikilinks" not in parsed.memory.extra
    renamed = await rig.result("memory_rename", id=shop["id"], title="Elm Street Bakery")
    new_stem = renamed["to"].rsplit("/", 1)[1].removesuffix(".md")
    assert new_stem.startswith("elm-street-bakery-")
    assert _wikilinks(ann_file) == [f"[[{new_stem}]]"]
    await rig.result("memory_delete", id=shop["id"])
    assert _wikilinks(ann_file) == []


async def test_a_link_typed_in_a_note_becomes_a_link_both_ways(rig):
    ann = await rig.result("memory_write", content="# Ann Smith\n\nBakery.", category="people")
    stem = file_of(rig.root, ann).stem
    folder = rig.root / "categories" / "knowledge"
    (folder / "Garden.md").write_text(f"Ask [[{stem}|Ann]] about seeds. See [[Nowhere]].\n")
    (folder / "Plan.md").write_text("The [[Garden]] plan.\n")
    await rig.engine.sync.reconcile()
    listed = {m["title"]: m for m in (await rig.result(
        "memory_list", category="knowledge"))["memories"]}
    garden, plan = listed["Garden"], listed["Plan"]
    assert set(garden["links"]) == {ann["id"], plan["id"]}  # Plan's [[Garden]] too
    back = await rig.result("memory_backlinks", id=ann["id"])
    assert [m["id"] for m in back["memories"]] == [garden["id"]]
    assert (await rig.result("memory_read", id=ann["id"]))["links"] == [garden["id"]]
    text = (folder / "Garden.md").read_text()
    assert text.endswith(f"Ask [[{stem}|Ann]] about seeds. See [[Nowhere]].\n")  # as typed
    assert plan["links"] == [garden["id"]]
    before = (folder / "Garden.md").read_text()
    await rig.engine.sync.sync_paths([relpath_of(rig.root, garden, "knowledge")])
    assert (folder / "Garden.md").read_text() == before  # read again: nothing new


async def test_every_link_of_an_ingested_graph_names_a_file_of_the_root(rig):
    """Logseq's documentation graph ingested: each file's `wikilinks` parsed as an
    editor does (the name up to `|`) names a file that is there."""
    if not LOGSEQ_DOCS.is_dir():
        pytest.skip("the Logseq docs graph is not here")
    report = (await rig.result("memory_ingest", source="logseq",
                               path=str(LOGSEQ_DOCS)))["reports"][0]
    assert report["links"] > 300
    stems = {p.stem for p in (rig.root / "categories").rglob("*.md")}
    linked = 0
    for path in (rig.root / "categories").rglob("*.md"):
        for link in _wikilinks(path):
            assert link.startswith("[[") and link.endswith("]]"), link
            assert link[2:-2].split("|")[0] in stems, (path.name, link)
            linked += 1
    assert linked == 2 * report["links"]  # each link listed at both ends
