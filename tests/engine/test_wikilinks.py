"""Links an editor understands: each file lists its links as [[file name]]
(`wikilinks`, from the ids in `links`), kept right when a target is renamed or deleted;
a [[link]] written in a note's text by hand becomes a link both ways."""

from __future__ import annotations

import re

import pytest

from memoryd.store import frontmatter
from memoryd.store.names import as_named
from tests.ingest.test_sources import LOGSEQ_DOCS
from tests.layout import file_of, relpath_of


def _wikilinks(path) -> list[str]:
    head, _ = frontmatter.split(path.read_text())
    return list(head.get("wikilinks", []))


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
    assert new_stem == "Elm Street Bakery"  # a title of its own: the name, as it is
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


async def test_an_ingested_graph_opens_in_obsidian_and_draws_in_the_web_view(rig):
    """Logseq's documentation graph ingested (once, for three checks):
    - each file's `wikilinks`, parsed as an editor does (the name up to `|`), names a
      file that is there;
    - a page's `[[Other Page]]` in its text, as Obsidian reads it (by a file's name, any
      case), finds that page's file wherever its name can be a file name;
    - the store's link graph (`graph/links`) is its 150 most linked pages."""
    if not LOGSEQ_DOCS.is_dir():
        pytest.skip("the Logseq docs graph is not here")
    report = (await rig.result("memory_ingest", source="logseq",
                               path=str(LOGSEQ_DOCS)))["reports"][0]
    assert report["links"] > 300
    files = list((rig.root / "categories").rglob("*.md"))
    stems = {p.stem for p in files}
    linked = 0
    for path in files:
        for link in _wikilinks(path):
            assert link.startswith("[[") and link.endswith("]]"), link
            assert link[2:-2].split("|")[0] in stems, (path.name, link)
            linked += 1
    assert linked == 2 * report["links"]  # each link listed at both ends

    folded = {stem.casefold() for stem in stems}
    titles = {m["title"].casefold()
              for m in (await rig.result("memory_list", limit=1000))["memories"]}
    found = missing = 0
    for path in files:
        body = path.read_text().split("---\n", 2)[-1]
        for target in re.findall(r"\[\[([^\[\]\n]+)\]\]", body):
            name = target.split("|")[0].strip()
            if name.casefold() not in titles or as_named(name) is None:
                continue  # no page of that name was ingested, or no file can be named so
            if name.casefold() in folded:
                found += 1
            else:
                missing += 1
    assert found > 500 and missing == 0, (found, missing)

    graph = await rig.result("graph/links")
    shown = {n["id"] for n in graph["nodes"]}
    assert len(shown) == 150 and graph["truncated"] and graph["linked"] > 150
    assert all(e["source"] in shown and e["target"] in shown for e in graph["edges"])
    degrees = [n["links"] for n in graph["nodes"]]
    assert degrees == sorted(degrees, reverse=True) and degrees[0] > 5


async def test_the_stores_link_graph_is_the_most_linked_a_caller_may_see(rig):
    from memoryd.protocol.dispatch import Connection
    from memoryd.scopes import Caller

    ann = await rig.result("memory_write", content="Ann", category="people")
    bea = await rig.result("memory_write", content="Bea", category="people")
    hub = await rig.result("memory_write", content="Family", category="knowledge")
    mine = await rig.result("memory_write", content="A private note", scope="agent:other")
    for other in (ann, bea, mine):
        await rig.result("memory_link", source=hub["id"], target=other["id"])
    graph = await rig.result("graph/links")
    assert graph["nodes"][0]["id"] == hub["id"]  # the most linked first
    assert graph["nodes"][0]["links"] == 3 and graph["nodes"][0]["title"] == "Family"
    assert len(graph["edges"]) == 3 and graph["linked"] == 4 and not graph["truncated"]
    bot = Connection()
    bot.caller = Caller(agent="agent:bot")  # may not see agent:other's note
    seen = await rig.result("graph/links", bot)
    assert {n["id"] for n in seen["nodes"]} == {hub["id"], ann["id"], bea["id"]}
    assert {frozenset((e["source"], e["target"])) for e in seen["edges"]} == {
        frozenset((hub["id"], ann["id"])), frozenset((hub["id"], bea["id"]))}


async def test_a_link_typed_to_another_agents_private_memory_stays_text(rig):
    """Bob's agent types [[<id>]], [[<file stem>]] of Alice's agent's private memory in a
    note of its own, and the user types one in a global note: no link at either end, the
    private file is not rewritten, and Alice's own links still work."""
    secret = await rig.result("memory_write", content="# Divorce lawyer\n\nMs Quinlan.",
                              category="people", scope="agent:alice")
    private = file_of(rig.root, secret)
    before = private.read_bytes()
    mine = await rig.result("memory_write", content="# Alice notes\n\nher plan",
                            category="knowledge", scope="agent:alice")
    folder = rig.root / "categories" / "knowledge"
    (folder / "Bob.md").write_text(
        f"---\nscope: agent:bob\n---\nsee [[{secret['id']}]] and [[{private.stem}]]\n")
    (folder / "Everyone.md").write_text(f"also [[{private.stem}]]\n")
    (folder / "Alice.md").write_text(
        f"---\nscope: agent:alice\n---\nmine: [[{private.stem}]] and [[{mine['id']}]]\n")
    await rig.engine.sync.reconcile()
    listed = {m["title"]: m for m in (await rig.result(
        "memory_list", category="knowledge"))["memories"]}
    assert listed["Bob"]["links"] == [] and listed["Everyone"]["links"] == []
    assert set(listed["Alice"]["links"]) == {secret["id"], mine["id"]}
    after = (await rig.result("memory_read", id=secret["id"]))["links"]
    assert after == [listed["Alice"]["id"]]  # only the note of its own scope
    assert b"agent:bob" not in private.read_bytes() and private.read_bytes() != before


async def test_a_title_of_its_own_is_the_files_name_and_a_typed_link_finds_it(rig):
    """`[[Staging environment]]`, as Obsidian completes it, names the note titled so;
    written through a tool, it is a link both ways. A second note of that title takes
    the id's suffix."""
    staging = await rig.result("memory_write", title="Staging environment",
                               content="Postgres 16 on port 5433.\n\n## Ports\n\n5433.",
                               category="project")
    assert relpath_of(rig.root, staging) == "categories/project/Staging environment.md"
    twin = await rig.result("memory_write", title="Staging environment",
                            content="The other staging box.", category="project")
    assert relpath_of(rig.root, twin).endswith(f"/staging-environment-{twin['id'][:8]}.md")
    deploy = await rig.result("memory_write", category="knowledge", content=(
        "Deploy to [[Staging environment|staging]] first; ports in "
        "![[staging environment#Ports]]. Not a link: `[[Staging environment]]`."))
    assert (await rig.result("memory_read", id=deploy["id"]))["links"] == [staging["id"]]
    assert deploy["id"] in (await rig.result("memory_read", id=staging["id"]))["links"]
    updated = await rig.result("memory_write", content="Nothing linked yet.",
                               category="knowledge")
    await rig.result("memory_update", id=updated["id"],
                     content="Now see [[Staging environment]].")
    assert (await rig.result("memory_read", id=updated["id"]))["links"] == [staging["id"]]

    # A rename follows into the text of the notes that link to it.
    renamed = await rig.result("memory_rename", id=staging["id"], title="Staging")
    assert renamed["to"] == "categories/project/Staging.md"
    text = (await rig.result("memory_read", id=deploy["id"]))["content"]
    assert text == ("Deploy to [[Staging|staging]] first; ports in ![[Staging#Ports]]. "
                    "Not a link: `[[Staging environment]]`.")
    assert (await rig.result("memory_read", id=updated["id"]))["content"] == \
        "Now see [[Staging]]."
    assert _wikilinks(file_of(rig.root, deploy)) == ["[[Staging]]"]


async def test_a_typed_link_names_its_file_exactly_not_as_a_pattern(rig):
    """`_` and `%` in a link are the characters themselves, never SQL's wildcards."""
    exact = await rig.result("memory_write", title="q3_plan", content="The plan.",
                             category="project")
    await rig.result("memory_write", title="q3-plan", content="Another.", category="project")
    await rig.result("memory_write", title="q3Xplan", content="A third.", category="project")
    linking = await rig.result("memory_write", category="knowledge",
                               content="See [[Q3_PLAN]] and [[100%]].")
    assert (await rig.result("memory_read", id=linking["id"]))["links"] == [exact["id"]]
