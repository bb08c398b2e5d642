"""One odd file in a folder being ingested is reported and the rest lands: names no
memory can record (a line break, bytes that are not UTF-8, a path over 1,024
characters), journals named like impossible dates, transcript lines that cannot be
stored. A re-run does the same without failing."""

from __future__ import annotations

import json
import os
from pathlib import Path


def _odd_names(folder: Path) -> None:
    """Files whose names no memory can record, under `folder`."""
    (folder / "line\nbreak.md").write_text("- a file name with a line break\n")
    (folder / "carriage\rreturn.md").write_text("- a file name with a carriage return\n")
    with open(os.fsencode(folder) + b"/latin1-caf\xe9.md", "wb") as f:
        f.write(b"- a file name in Latin-1\n")
    deep = os.fsencode(folder)
    for _ in range(400):  # a path of 1,600 characters, within the OS's limit
        deep += b"/abc"
    os.makedirs(deep)
    with open(deep + b"/deep.md", "wb") as f:
        f.write(b"- far down\n")


def _reasons(report: dict, key: str) -> dict[str, int]:
    return {group["reason"]: group["count"] for group in report[key]}


async def test_a_logseq_graph_with_odd_names_and_impossible_journal_dates(rig,
                                                                         tmp_path) -> None:
    graph = tmp_path / "graph"
    (graph / "pages").mkdir(parents=True)
    (graph / "journals").mkdir()
    (graph / "pages" / "Garden.md").write_text("- tomatoes by the wall, see [[Compost]]\n")
    (graph / "pages" / "Compost.md").write_text("- turn it weekly\n")
    _odd_names(graph / "pages")
    for day in ("2020_13_45", "0000_01_01", "2024_02_30"):
        (graph / "journals" / f"{day}.md").write_text(f"- written on {day}, see [[Garden]]\n")
    (graph / "journals" / "2024_02_29.md").write_text("- a leap day\n")

    for run in range(2):
        result = await rig.result("memory_ingest", source="logseq", path=str(graph))
        report = result["reports"][0]
        skipped = _reasons(report, "skipped")
        assert skipped["the name holds a line break or NUL"] == 2
        assert skipped["the name is not UTF-8"] == 1
        assert skipped["the path is over 1024 characters: the folder is not read"] == 1
        assert report["failed"] == []
        noted = _reasons(report, "noted")
        assert noted == {"the journal's name is not a real date: read as an undated page": 3}
        if run == 0:
            assert (report["added"], report["links"]) == (6, 4)
        else:
            assert (report["added"], report["unchanged"]) == (0, 6)
    latin = next(g for g in report["skipped"] if g["reason"] == "the name is not UTF-8")
    assert latin["paths"] == ["pages/latin1-caf\ufffd.md"]

    listed = await rig.result("memory_list", source="ingest:logseq", limit=100)
    by_path = {m["source_path"]: m for m in listed["memories"]}
    assert by_path["journals/2024_02_29.md"]["created_at"].startswith("2024-02-29")
    undated = by_path["journals/2024_02_30.md"]
    assert not undated["created_at"].startswith("2024-02-30")
    assert by_path["pages/Garden.md"]["id"] in undated["links"]


async def test_an_obsidian_vault_with_odd_names(rig, tmp_path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Home.md").write_text("# Home\n\nStart at [[Plans]].\n")
    (vault / "Plans.md").write_text("# Plans\n\nMove the shed.\n")
    _odd_names(vault)
    report = (await rig.result("memory_ingest", source="obsidian", path=str(vault)))[
        "reports"][0]
    assert (report["added"], report["links"], report["failed"]) == (2, 1, [])
    assert sum(_reasons(report, "skipped").values()) == 4


async def test_transcript_lines_that_cannot_be_stored_fail_alone(rig, tmp_path) -> None:
    project = tmp_path / "claude" / "projects" / "p"
    project.mkdir(parents=True)

    def line(uuid: str, text: str) -> str:
        return json.dumps({"type": "user", "sessionId": "s-1", "uuid": uuid,
                           "timestamp": "2025-06-01T10:00:00Z",
                           "message": {"role": "user", "content": text}})

    lines = [line("u1", "I keep my bike in the hall"),
             line("u2\nsecond", "a line id with a line break"),
             line("u3", "a lone surrogate \udcff in the text"),
             line("u4", "I water the plants on Sundays")]
    (project / "s-1.jsonl").write_text("\n".join(lines) + "\n")
    report = (await rig.result("memory_ingest", source="claude-code",
                               path=str(tmp_path / "claude")))["reports"][0]
    assert report["added"] == 2
    failed = {path: group["reason"] for group in report["failed"] for path in group["paths"]}
    assert set(failed) == {"projects/p/s-1.jsonl#u2\nsecond", "projects/p/s-1.jsonl:3"}
    assert "surrogate" in failed["projects/p/s-1.jsonl:3"]
