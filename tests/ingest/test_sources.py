"""Each source's reader over the fixtures in tests/ingest/fixtures (written from the
formats' documentation) and Logseq's own documentation graph."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memoryd.ingest import (
    chatgpt,
    claude,
    claude_code,
    codex,
    gemini,
    logseq,
    mcp_memory,
    obsidian,
    plain,
)
from memoryd.ingest.markup import inline_tags, wikilinks

FIXTURES = Path(__file__).parent / "fixtures"
LOGSEQ_DOCS = Path(__file__).parents[2].parent / "shared" / "bench" / "ingest" / "logseq-docs"


def test_wikilinks_and_tags_follow_obsidian_syntax() -> None:
    text = ("[[Note]] [[Other|label]] [[Third#Heading]] ![[embed.png]] [[x^block]] "
            "`[[code]]` [[https://a.b/c]] #tag #nested/tag #42 a#b https://x.org/#frag")
    assert wikilinks(text) == ["Note", "Other", "Third", "embed.png", "x"]
    assert inline_tags(text) == ["tag", "nested/tag"]


def test_obsidian_vault() -> None:
    scan = obsidian.read(FIXTURES / "vault")
    notes = {d.path: d for d in scan.documents}
    assert sorted(notes) == ["Home.md", "Projects/Garden Plan.md", "Reading List.md",
                             "Recipes.md"]
    home = notes["Home.md"]
    assert home.tags == ["index", "personal", "inbox/todo", "weekly-review"]
    assert home.aliases == ["Start", "Dashboard"]
    assert home.links == ["Garden Plan", "garden plan", "Reading List", "diagram.png", "Recipes"]
    assert home.content.startswith("# Home\n")  # its own heading, not doubled
    garden = notes["Projects/Garden Plan.md"]
    # The body as written (no heading made up for it): the file's name is its title.
    assert garden.content.startswith("Raised beds") and garden.title == "Garden Plan"
    assert garden.tags == ["gardening"] and garden.links == ["Start"]  # not the code's
    assert garden.names == ["Garden Plan", "Projects/Garden Plan"]
    assert garden.aliases == ["Allotment"]
    skipped = dict(scan.skipped)
    assert skipped == {"attachments/diagram.png": "not Markdown (attachment or other file)",
                       "attachments/notes.txt": "not Markdown (attachment or other file)"}
    assert scan.failed == []


def test_obsidian_never_follows_links_or_reads_fifos(tmp_path: Path) -> None:
    (tmp_path / "real.md").write_text("A real note.")
    (tmp_path / "outside.md").symlink_to("/etc/passwd")
    (tmp_path / "linked-dir").symlink_to("/etc", target_is_directory=True)
    os.mkfifo(tmp_path / "pipe.md")
    (tmp_path / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    scan = obsidian.read(tmp_path)
    assert [d.path for d in scan.documents] == ["real.md"]
    assert dict(scan.skipped) == {"linked-dir": "symlink (not followed)",
                                  "outside.md": "symlink (not followed)",
                                  "pipe.md": "not a regular file"}
    assert dict(scan.failed) == {"latin1.md": "not UTF-8 text (byte 3)"}


def test_logseq_pages_from_the_documentation_graph() -> None:
    """Eight files of Logseq's own docs graph (MIT, LICENSE.md beside them), so this runs
    wherever the tests do; the whole graph is read below when ../shared is there."""
    scan = logseq.read(FIXTURES / "logseq")
    docs = {d.path: d for d in scan.documents}
    assert sorted(docs) == ["journals/2020_05_14.org", "journals/2020_10_07.md",
                            "pages/All Platforms.md", "pages/Block Reference.md",
                            "pages/Changelog_2020.org", "pages/Feature.md",
                            "pages/Whiteboard___Action Bar.md"]
    assert dict(scan.skipped) == {"pages/favorites.md": "empty page"}
    journal = docs["journals/2020_05_14.org"]
    assert journal.created_at == datetime(2020, 5, 14, tzinfo=UTC)
    assert "May 14th, 2020" in journal.names and "Changelog 2020" in journal.links
    assert docs["pages/Changelog_2020.org"].names[0] == "Changelog 2020"  # #+TITLE:
    ref = docs["pages/Block Reference.md"]
    assert "term/block reference" in ref.aliases
    assert ref.links[:2] == ["Feature", "All Platforms"]
    assert "Whiteboard/Action Bar" in docs["pages/Whiteboard___Action Bar.md"].names
    assert not any("://" in link for d in docs.values() for link in d.links)


@pytest.mark.skipif(not LOGSEQ_DOCS.is_dir(), reason="the shared Logseq docs graph is absent")
def test_logseq_documentation_graph() -> None:
    scan = logseq.read(LOGSEQ_DOCS)
    docs = {d.path: d for d in scan.documents}
    pages = [p for p in docs if p.startswith("pages/")]
    journals = [p for p in docs if p.startswith("journals/")]
    assert len(pages) >= 230 and len(journals) >= 70
    assert any(p.endswith(".org") for p in journals)
    journal = docs["journals/2020_05_14.org"]
    assert journal.created_at == datetime(2020, 5, 14, tzinfo=UTC)
    assert "May 14th, 2020" in journal.names
    assert "Changelog 2020" in journal.links
    assert not any("://" in link for d in docs.values() for link in d.links)
    ref = docs["pages/Block Reference.md"]
    assert "term/block reference" in ref.aliases  # alias::
    assert ref.links[:2] == ["Feature", "All Platforms"]  # property values link too
    assert "autocompletion" in ref.soft_links and "autocompletion" in ref.tags  # a #tag
    assert ref.content.startswith("# Block Reference\n\ntype:: [[Feature]]")  # outline kept
    namespaced = docs["pages/Whiteboard___Action Bar.md"]
    assert "Whiteboard/Action Bar" in namespaced.names
    assert scan.failed == []


def test_claude_memory_files() -> None:
    scan = claude.read(FIXTURES / "claude")
    docs = {d.path: d for d in scan.documents}
    assert sorted(docs) == ["CLAUDE.md", "code/shop/CLAUDE.md",
                            "projects/-home-ada-shop/memory/decisions.md"]
    assert docs["code/shop/CLAUDE.md"].content.startswith("# code/shop CLAUDE\n")
    assert "Stripe over PayPal" in docs["projects/-home-ada-shop/memory/decisions.md"].content
    assert all("claude" in d.tags for d in docs.values())


def test_claude_code_transcript_keeps_user_and_assistant_text_only() -> None:
    scan = claude_code.read(FIXTURES / "claude")
    assert [(t.role, t.content[:30]) for t in scan.turns] == [
        ("user", "My name is Ada and I maintain "),
        ("assistant", "I'll add a webhook endpoint fo"),
        ("assistant", "Done: refunds now arrive at /w"),
        ("user", "I prefer tabs over spaces in t"),
    ]
    first = scan.turns[0]
    assert first.session == "7f3c2a10-1b2c-4d5e-8f90-123456789abc"
    assert first.path == ("projects/-home-ada-shop/7f3c2a10-1b2c-4d5e-8f90-123456789abc"
                          ".jsonl#u1")
    assert first.created_at == datetime(2025, 6, 1, 10, 0, tzinfo=UTC)
    assert "secret reasoning" not in scan.turns[1].content
    assert [reason.split(":")[0] for _, reason in scan.failed] == ["not JSON"]
    assert scan.failed[0][0].endswith(".jsonl:9")


def test_car_agent_and_fingersaver_are_truncated() -> None:
    car = {d.path: d for d in plain.car_agent(FIXTURES / "car-agent").documents}
    assert sorted(car) == ["garage.md", "trips/long.md"]
    assert len(car["trips/long.md"].content) == plain.TRUNCATE
    finger = plain.fingersaver(FIXTURES / "fingersaver")
    assert [d.path for d in finger.documents] == ["chat.md"]
    assert len(finger.documents[0].content) == plain.TRUNCATE
    assert plain.fingersaver(FIXTURES / "vault").skipped == [("chat.md", "not found")]


def test_markdown_folder() -> None:
    scan = plain.markdown(FIXTURES / "vault")
    assert len(scan.documents) == 4
    assert len(scan.skipped) == 2


def test_mcp_memory_graph_entities_observations_and_relations() -> None:
    """The fixture is written from the MCP memory server's storage format (its README
    and source: one `{"type": "entity"|"relation", ...}` object a line)."""
    scan = mcp_memory.read(FIXTURES / "mcp-memory")
    docs = {d.names[0]: d for d in scan.documents}
    assert set(docs) == {"Ann Smith", "TechCorp", "Kestrel"}
    ann = docs["Ann Smith"]
    assert ann.path == "memory.jsonl#Ann Smith" and ann.tags == ["person"]
    assert ann.content == ("# Ann Smith\n\nType: person\n\n"
                           "- Works at TechCorp as a data engineer\n- Prefers tea over coffee\n"
                           "- Speaks Portuguese\n\nRelations:\n- works_at: TechCorp\n"
                           "- maintains: Kestrel\n")  # one entity, observations merged
    assert ann.links == ["TechCorp", "Kestrel"]
    assert docs["Kestrel"].links == ["Bob Jones"]  # unresolved: no such entity
    failed = dict(scan.failed)
    assert "which no entity is" in failed["memory.jsonl:8"]
    assert "needs a name" in failed["memory.jsonl:9"]
    assert "neither an entity nor a relation" in failed["memory.jsonl:10"]
    assert failed["memory.jsonl:11"].startswith("not JSON")


def test_chatgpt_export_follows_the_chosen_branch() -> None:
    """The fixture is written from the export's documented shape (`conversations.json`:
    a list of conversations, each a `mapping` of nodes with `parent`, `children` and a
    `message`, and the chosen branch's leaf in `current_node`)."""
    scan = chatgpt.read(FIXTURES / "chatgpt")
    session = "6a1f0c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b"
    assert [(t.role, t.content[:24]) for t in scan.turns] == [
        ("user", "I'm planning a week in P"), ("assistant", "Porto in September is lo"),
        ("user", "What about day trips fro"), ("assistant", "Guimarães and Braga are ")]
    assert {t.session for t in scan.turns} == {session}
    assert scan.turns[0].path == f"conversations.json#{session}:n1"
    assert scan.turns[0].created_at == datetime.fromtimestamp(1717236000.5, UTC)
    failed = dict(scan.failed)
    assert "without its mapping" in failed["conversations.json[1]"]
    assert "not a valid session name" in failed["conversations.json[2]"]


def test_codex_sessions_keep_user_and_assistant_text_only() -> None:
    """The fixtures are written from Codex CLI's session format as its rollout files
    hold it (`session_meta`, then `response_item` lines; an older file opens with the
    session's id and holds `message` lines directly)."""
    scan = codex.read(FIXTURES / "codex")
    by_session: dict[str, list[tuple[str, str]]] = {}
    for t in scan.turns:
        by_session.setdefault(t.session, []).append((t.role, t.content[:22]))
    assert by_session == {
        "0197a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b": [("user", "We always run the migr"),
                                                 ("assistant", "I added an alembic mig")],
        "5973b6c0-94b8-487b-a530-2aeb6098ae0e": [("user", "Use pnpm in this repos"),
                                                 ("assistant", "Understood: pnpm from ")]}
    (first,) = [t for t in scan.turns if t.path.endswith("-0c1d2e3f4a5b.jsonl#4")]
    assert first.created_at == datetime(2025, 6, 2, 9, 0, 2, tzinfo=UTC)
    assert [reason[:8] for _, reason in scan.failed] == ["not JSON"]


GEMINI_CHAT = "tmp/9f2c41d6e0/chats/session-2026-11-20T09-14-0a1b2c3d.jsonl"


def test_gemini_chats_as_the_cli_reloads_them() -> None:
    """The fixtures follow Gemini CLI's chat recording (its chatRecordingService and
    chatRecordingTypes): a JSON Lines log of metadata, messages (rewritten under their
    id), `$rewindTo` and `$set` records; an older session is one JSON object."""
    scan = gemini.read(FIXTURES / "gemini")
    turns = [(t.path.rsplit("#", 1)[1], t.role, t.content) for t in scan.turns]
    assert turns == [
        ("a1", "user", "The CI runs on GitHub Actions with a self-hosted ARM runner."),
        ("a2", "assistant", "Understood, the ARM runner is self-hosted."),
        ("m1", "user", "Our staging database is Postgres 16 on db-staging.internal; "
                       "migrations run with sqitch."),
        # the message as last written, its thought left out; m3 (info), m4 (a slash
        # command) and the rewound m5-m6 are gone; the hook's context is cut from m7
        ("m2", "assistant", "Noted: sqitch deploys to staging first, then production "
                            "after review."),
        ("m7", "user", "Deploys happen on Thursdays after the standup."),
        ("m8", "assistant", "Got it: Thursday deploys, after the standup.")]
    assert {t.session for t in scan.turns} == {"5e6f7a8b-1c2d-4e3f-9a0b-1c2d3e4f5a6b",
                                                "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"}
    assert scan.turns[2].created_at == datetime(2026, 11, 20, 9, 14, 5, tzinfo=UTC)
    assert scan.failed == [(f"{GEMINI_CHAT}:6", "not JSON: Input data was truncated")]
    one = gemini.read(FIXTURES / "gemini", GEMINI_CHAT)  # a hook's session only
    assert [t.path.rsplit("#", 1)[1] for t in one.turns] == ["m1", "m2", "m7", "m8"]
