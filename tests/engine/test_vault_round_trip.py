"""An Obsidian vault ingested and opened again as a vault: the root, checked with
Obsidian's own link rules (tests/obsidian_links.py), resolves every link that resolved
in the source vault, to the same note; each note keeps its folders, its name, its body
as written and its aliases."""

from __future__ import annotations

from pathlib import Path

from memoryd.store import frontmatter
from tests.layout import file_of
from tests.obsidian_links import Vault, links

NOTES = {
    "Home.md": """---
aliases: [Start]
tags: [index]
---
# Home

See [[Projects/Shop/Payments]] and [[Payments|the payments page]]; refunds are in
[[Payments#Refunds]]. The shop's index: [[Shop/Index]]; the areas' index:
[[Areas/Index]]; any index: [[index]]. Billing is [[Billing]] (an alias: not a link
in Obsidian). Not written yet: [[Someday]].

![[Projects/Shop/Payments#Refunds]]

Tagged #home.
""",
    "Projects/Shop/Payments.md": """---
aliases: [Billing, Payments page]
tags: [shop]
---
Card payments go through the gateway. Back to [[Home]].

## Refunds

Refunds take five days; see [[Shop/Index|the shop]].
""",
    "Projects/Shop/Index.md": "The shop's notes: [[Payments]], [[Projects/Shop/Suppliers]].\n",
    "Projects/Shop/Suppliers.md": """Beans come from [[Areas/Coffee Roasters]], see
[[#Contacts]].

## Contacts

Ann at the roastery.
""",
    "Areas/Index.md": "Areas: [[Coffee Roasters]], [[Health]], [[index]].\n",
    "Areas/Coffee Roasters.md": "Roasted weekly, on Mondays. Up: [[Index]].\n",
    "Areas/Health.md": "Run on Sundays.\n\n![[Coffee Roasters]]\n",
    "Daily/2026-11-01.md": "Met the roaster ([[Coffee Roasters#No such heading]]).\n",
}


def _vault(folder: Path) -> Path:
    vault = folder / "My Vault"
    for rel, text in NOTES.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(text)
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "app.json").write_text("{}")
    return vault


async def test_every_link_that_resolved_in_the_vault_resolves_in_the_root(
        rig, tmp_path_factory):
    vault = _vault(tmp_path_factory.mktemp("source"))  # outside the root
    source = Vault(vault)
    resolved = {(note, link): target for note in source.notes
                for link in links((vault / note).read_text())
                if (target := source.resolve(link, note)) is not None}
    assert len(resolved) == 18  # the vault as Obsidian sees it (4 of its links do not)
    report = (await rig.result("memory_ingest", source="obsidian", path=str(vault)))
    assert report["added"] == len(NOTES)
    listed = (await rig.result("memory_list", limit=100))["memories"]
    where = {m["source_path"]: file_of(rig.root, m).relative_to(rig.root).as_posix()
             for m in listed}
    # Each note in its folders, under the folder of its category, by its own name.
    assert where["Projects/Shop/Payments.md"] == "categories/inbox/Projects/Shop/Payments.md"
    assert where["Areas/Index.md"] == "categories/inbox/Areas/Index.md"
    root = Vault(rig.root)
    for (note, link), target in resolved.items():
        assert root.resolve(link, where[note]) == where[target], (note, link.raw)
    for note, rel in where.items():
        text = (rig.root / rel).read_text()
        head, body = frontmatter.split(text)
        _, written = frontmatter.split(NOTES[note]) if NOTES[note].startswith("---") \
            else ({}, NOTES[note])
        assert body.strip() == written.strip()  # as written: no heading made up
        # The links memoryd keeps in the front matter resolve too.
        for link in links("\n".join(head.get("wikilinks", []))):
            assert root.resolve(link, rel) is not None, (rel, link.raw)
    payments = frontmatter.split((rig.root / where["Projects/Shop/Payments.md"]).read_text())[0]
    assert payments["aliases"] == ["Billing", "Payments page"]
    assert payments["title"] == "Payments" and payments["tags"] == ["shop"]
    # memoryd's own links follow the vault's (its aliases too: Billing is Payments).
    home = next(m for m in listed if m["source_path"] == "Home.md")
    pay = next(m for m in listed if m["source_path"] == "Projects/Shop/Payments.md")
    assert pay["id"] in (await rig.result("memory_read", id=home["id"]))["links"]


async def test_a_vaults_note_keeps_its_folders_when_its_category_changes(
        rig, tmp_path_factory):
    vault = _vault(tmp_path_factory.mktemp("source"))
    await rig.result("memory_ingest", source="obsidian", path=str(vault))
    (pay,) = [m for m in (await rig.result("memory_list", limit=100))["memories"]
              if m["source_path"] == "Projects/Shop/Payments.md"]
    await rig.result("memory_update", id=pay["id"], category="knowledge")
    moved = file_of(rig.root, pay).relative_to(rig.root).as_posix()
    assert moved == "categories/knowledge/Projects/Shop/Payments.md"
    # A link typed in another note by the vault's path still finds it.
    note = await rig.result("memory_write", content="Ask about [[Shop/Payments]] fees.",
                            category="knowledge")
    assert pay["id"] in (await rig.result("memory_read", id=note["id"]))["links"]


async def test_a_vaults_folders_are_read_again_at_start_and_by_hand(tmp_path_factory):
    """A restart reads the notes in their folders where they are (none moved, none
    lost), and a note a person makes in such a folder is read there too."""
    from tests.rig import Rig

    root = tmp_path_factory.mktemp("root")
    first = Rig(root)
    await first.start()
    await first.result("memory_ingest", source="obsidian",
                       path=str(_vault(tmp_path_factory.mktemp("source"))))
    before = sorted(p.relative_to(root).as_posix() for p in (root / "categories").rglob("*.md"))
    first.close()
    again = Rig(root)
    await again.start()
    try:
        after = sorted(p.relative_to(root).as_posix() for p in (root / "categories").rglob("*.md"))
        assert after == before and len(after) == len(NOTES)
        assert (await again.result("memory_list", limit=100))["total"] == len(NOTES)
        made = root / "categories" / "inbox" / "Areas" / "Garden.md"
        made.write_text("Tomatoes by the south fence; see [[Health]].\n")
        await again.engine.sync.sync_paths(["categories/inbox/Areas/Garden.md"])
        hits = (await again.result("memory_search", query="tomatoes south fence"))["memories"]
        assert hits and hits[0]["title"] == "Garden"
        assert file_of(root, hits[0]) == made  # read where it was made, not moved
        assert len((await again.result("memory_read", id=hits[0]["id"]))["links"]) == 1
    finally:
        again.close()
