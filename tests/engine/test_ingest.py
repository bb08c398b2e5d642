"""memory_ingest through the dispatcher: what lands, links, idempotency, updates,
missing files, transcripts through memory_remember's path, progress."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memoryd.protocol.dispatch import Connection
from tests.ingest.test_sources import FIXTURES, LOGSEQ_DOCS


def _copy(name: str, tmp_path: Path) -> Path:
    target = tmp_path / f"src-{name}"
    shutil.copytree(FIXTURES / name, target, symlinks=True)
    return target


def _by_path(memories: list[dict]) -> dict[str, dict]:
    return {m["source_path"]: m for m in memories}


async def _ingested(rig, source: str) -> dict[str, dict]:
    listed = await rig.result("memory_list", source=f"ingest:{source}", limit=1000)
    return _by_path(listed["memories"])


async def test_obsidian_vault_lands_in_the_inbox_linked_and_idempotent(rig, tmp_path) -> None:
    vault = _copy("vault", tmp_path)
    conn = Connection()
    sent: list[tuple[str, dict]] = []

    async def send(method: str, params: dict) -> None:
        sent.append((method, params))

    conn.send = send
    result = await rig.result("memory_ingest", conn, source="obsidian", path=str(vault),
                              _meta={"progressToken": "t1"})
    report = result["reports"][0]
    assert (report["added"], report["updated"], report["unchanged"]) == (4, 0, 0)
    assert report["skipped"][0]["count"] == 2 and report["failed"] == []
    assert report["unresolved_links"] == 2  # [[Missing Note]] and the embedded image
    assert sent and all(m == "notifications/progress" and p["progressToken"] == "t1"
                        for m, p in sent)
    assert sent[-1][1]["progress"] == sent[-1][1]["total"] == 4

    notes = await _ingested(rig, "obsidian")
    home, garden = notes["Home.md"], notes["Projects/Garden Plan.md"]
    reading, recipes = notes["Reading List.md"], notes["Recipes.md"]
    assert home["phase"] == "inbox" and home["expires_at"] is None
    assert home["tags"] == ["index", "personal", "inbox/todo", "weekly-review"]
    # [[Garden Plan]], [[Start]] (an alias), [[allotment]] (an alias, other case), ![[Recipes]]
    assert set(home["links"]) == {garden["id"], reading["id"], recipes["id"]}
    assert set(garden["links"]) == {home["id"], reading["id"]}
    back = await rig.result("memory_backlinks", id=garden["id"])
    assert {m["id"] for m in back["memories"]} == {home["id"], reading["id"]}

    again = (await rig.result("memory_ingest", source="obsidian", path=str(vault)))
    assert (again["added"], again["updated"], again["unchanged"]) == (0, 0, 4)
    assert (await _ingested(rig, "obsidian")) == notes  # not one byte changed

    (vault / "Recipes.md").write_text("---\ntags: [cooking]\n---\nPesto: basil, pine nuts.\n")
    (vault / "Reading List.md").unlink()
    changed = (await rig.result("memory_ingest", source="obsidian", path=str(vault)))
    report = changed["reports"][0]
    assert (report["added"], report["updated"], report["unchanged"]) == (0, 1, 2)
    assert report["missing"] == {"count": 1, "paths": ["Reading List.md"]}
    now = await _ingested(rig, "obsidian")
    assert now["Recipes.md"]["id"] == recipes["id"]
    assert now["Recipes.md"]["version"] == recipes["version"] + 1
    assert "Pesto" in now["Recipes.md"]["content"]
    assert "Reading List.md" in now  # reported, never deleted


async def test_dry_run_changes_nothing_and_duplicates_are_skipped(rig, tmp_path) -> None:
    vault = _copy("vault", tmp_path)
    dry = await rig.result("memory_ingest", source="markdown", path=str(vault), dry_run=True)
    assert dry["added"] == 4 and dry["dry_run"] is True
    assert (await rig.result("memory_list"))["total"] == 0
    await rig.result("memory_ingest", source="obsidian", path=str(vault))
    # The same files through another source: the content is already stored.
    other = await rig.result("memory_ingest", source="markdown", path=str(vault))
    reasons = {s["reason"].split(":")[0]: s for s in other["reports"][0]["skipped"]}
    assert other["added"] == 0 and reasons["duplicate"]["count"] == 4
    assert reasons["duplicate"]["paths"][0].startswith("Home.md (= memory ")


async def test_errors_name_the_problem(rig, tmp_path) -> None:
    missing = await rig.error("memory_ingest", source="markdown", path=str(tmp_path / "nope"))
    assert missing["code"] == -32602 and "no folder at" in missing["message"]
    relative = await rig.error("memory_ingest", source="markdown", path="notes")
    assert "not an absolute path" in relative["message"]
    no_default = await rig.error("memory_ingest", source="obsidian")
    assert "ingest.paths.obsidian" in no_default["message"]
    bad = await rig.error("memory_ingest", source="evernote", path=str(tmp_path))
    assert bad["code"] == -32602


async def test_claude_code_transcripts_become_turns_of_their_session(rig, tmp_path) -> None:
    home = _copy("claude", tmp_path)
    result = await rig.result("memory_ingest", source="claude-code", path=str(home))
    report = result["reports"][0]
    assert report["added"] == 4 and len(report["failed"]) == 1
    session = "7f3c2a10-1b2c-4d5e-8f90-123456789abc"
    turns = (await rig.result("memory_list", source="ingest:claude-code"))["memories"]
    assert {t["session"] for t in turns} == {session} and {t["kind"] for t in turns} == {"turn"}
    assert min(t["created_at"] for t in turns).startswith("2025-06-01T10:00:00")
    await rig.engine.learning.drain()  # the background path: facts and the summary
    learned = " ".join(m.content for m in rig.engine.catalog.writer.all_memories()
                       if m.kind == "fact")
    assert "Ada" in learned and "tabs" in learned
    recall = await rig.result("memory_recall", query="refund webhooks", session=session)
    assert recall["recent"]
    again = await rig.result("memory_ingest", source="claude-code", path=str(home))
    assert (again["added"], again["unchanged"]) == (0, 4)


async def test_claude_car_agent_and_fingersaver(rig, tmp_path) -> None:
    claude = await rig.result("memory_ingest", source="claude", path=str(_copy("claude",
                                                                              tmp_path)))
    assert claude["added"] == 3
    car = await rig.result("memory_ingest", source="car-agent",
                           path=str(_copy("car-agent", tmp_path)))
    assert car["added"] == 2
    long = (await _ingested(rig, "car-agent"))["trips/long.md"]
    assert len(long["content"]) == 5000
    finger = await rig.result("memory_ingest", source="fingersaver",
                              path=str(_copy("fingersaver", tmp_path)))
    assert finger["added"] == 1


async def test_all_reads_every_configured_folder(tmp_path) -> None:
    from tests.rig import Rig

    vault = _copy("vault", tmp_path)
    rig = Rig(tmp_path / "root", {"ingest": {"paths": {
        "obsidian": str(vault), "claude": str(tmp_path / "absent"),
        "claude-code": str(tmp_path / "absent"), "logseq": str(tmp_path / "absent"),
        "car-agent": str(_copy("car-agent", tmp_path)),
        "fingersaver": str(tmp_path / "absent")}}})
    await rig.start()
    try:
        result = await rig.result("memory_ingest", source="all")
        by = {r["source"]: r for r in result["reports"]}
        assert by["obsidian"]["added"] == 4 and by["car-agent"]["added"] == 2
        assert by["markdown"]["skipped"][0]["reason"] == "no folder configured"
        assert by["logseq"]["skipped"][0]["reason"] == "the folder does not exist"
    finally:
        rig.close()


async def test_logseq_pages_link_by_title_and_alias(rig) -> None:
    graph = FIXTURES / "logseq"  # eight files of Logseq's docs graph: runs everywhere
    result = await rig.result("memory_ingest", source="logseq", path=str(graph))
    assert result["added"] == 7 and result["reports"][0]["failed"] == []
    pages = await _ingested(rig, "logseq")
    journal = pages["journals/2020_05_14.org"]
    assert journal["created_at"].startswith("2020-05-14")
    assert journal["id"] in pages["pages/Changelog_2020.org"]["links"]  # via #+TITLE
    ref = pages["pages/Block Reference.md"]
    assert {pages["pages/Feature.md"]["id"], pages["pages/All Platforms.md"]["id"]} <= set(
        ref["links"])
    again = await rig.result("memory_ingest", source="logseq", path=str(graph))
    assert (again["added"], again["updated"], again["unchanged"]) == (0, 0, 7)


@pytest.mark.skipif(not LOGSEQ_DOCS.is_dir(), reason="the shared Logseq docs graph is absent")
async def test_logseq_documentation_graph(rig) -> None:
    result = await rig.result("memory_ingest", source="logseq", path=str(LOGSEQ_DOCS))
    report = result["reports"][0]
    assert report["added"] >= 300 and report["failed"] == []
    assert report["links"] >= 500
    pages = await _ingested(rig, "logseq")
    journal = pages["journals/2020_05_14.org"]
    assert journal["created_at"].startswith("2020-05-14")
    changelog = pages["pages/Changelog_2020.org"]  # `#+TITLE: Changelog 2020`
    assert journal["id"] in changelog["links"]  # [[Changelog 2020]] in the journal
    found = await rig.result("memory_search", query="block reference", limit=5)
    assert found["total"] > 0
    again = await rig.result("memory_ingest", source="logseq", path=str(LOGSEQ_DOCS))
    assert (again["added"], again["updated"]) == (0, 0)


async def test_mcp_memory_entities_become_linked_notes_once(rig, tmp_path) -> None:
    folder = _copy("mcp-memory", tmp_path)
    report = (await rig.result("memory_ingest", source="mcp-memory",
                               path=str(folder)))["reports"][0]
    assert (report["added"], report["links"], report["unresolved_links"]) == (3, 2, 1)
    assert sum(f["count"] for f in report["failed"]) == 4
    notes = _by_path((await rig.result("memory_list", source="ingest:mcp-memory"))["memories"])
    ann, corp = notes["memory.jsonl#Ann Smith"], notes["memory.jsonl#TechCorp"]
    assert corp["id"] in ann["links"] and ann["id"] in corp["links"]  # both ways
    assert ann["tags"] == ["person"]
    found = await rig.result("memory_smart_search", query="Where does Ann work?", top_k=1)
    assert found["memories"][0]["id"] == ann["id"]
    again = (await rig.result("memory_ingest", source="mcp-memory",
                              path=str(folder)))["reports"][0]
    assert (again["added"], again["updated"], again["unchanged"]) == (0, 0, 3)


async def test_chatgpt_conversations_become_turns_once(rig, tmp_path) -> None:
    folder = _copy("chatgpt", tmp_path)
    report = (await rig.result("memory_ingest", source="chatgpt",
                               path=str(folder)))["reports"][0]
    assert report["added"] == 4 and sum(f["count"] for f in report["failed"]) == 2
    turns = (await rig.result("memory_list", source="ingest:chatgpt"))["memories"]
    assert {t["kind"] for t in turns} == {"turn"} and len(turns) == 4
    assert not any("Lisbon" in t["content"] for t in turns)  # the branch not chosen
    await rig.engine.learning.drain()  # facts from the user's turns
    learned = " ".join(m.content for m in rig.engine.catalog.writer.all_memories()
                       if m.kind == "fact")
    assert "vegetarian" in learned
    again = (await rig.result("memory_ingest", source="chatgpt",
                              path=str(folder)))["reports"][0]
    assert (again["added"], again["unchanged"]) == (0, 4)


async def test_codex_sessions_become_turns_once(rig, tmp_path) -> None:
    home = _copy("codex", tmp_path)
    report = (await rig.result("memory_ingest", source="codex", path=str(home)))["reports"][0]
    assert report["added"] == 4
    turns = (await rig.result("memory_list", source="ingest:codex"))["memories"]
    assert len({t["session"] for t in turns}) == 2
    await rig.engine.learning.drain()
    learned = " ".join(m.content for m in rig.engine.catalog.writer.all_memories()
                       if m.kind == "fact")
    assert "alembic" in learned
    again = (await rig.result("memory_ingest", source="codex", path=str(home)))["reports"][0]
    assert (again["added"], again["unchanged"]) == (0, 4)


async def test_one_transcript_file_is_read_alone_and_known_as_the_folder_knows_it(
        rig, tmp_path) -> None:
    """What a coding agent's hook hands: its session's file. Its turns land once, in
    the scope given, under the same source paths a run over the whole folder gives."""
    home = _copy("claude", tmp_path)
    file = home / "projects/-home-ada-shop/7f3c2a10-1b2c-4d5e-8f90-123456789abc.jsonl"
    (home / "projects/-home-ada-shop/other.jsonl").write_text(
        '{"type":"user","uuid":"u9","sessionId":"s-other","message":{"role":"user",'
        '"content":"A different session that this run must not read at all."}}\n')
    one = await rig.result("memory_ingest", source="claude-code", path=str(file),
                           scope="project:shop-1a2b3c4d")
    report = one["reports"][0]
    assert report["path"] == str(file) and report["added"] == 4 and report["missing"] == {
        "count": 0, "paths": []}
    turns = (await rig.result("memory_list", source="ingest:claude-code"))["memories"]
    assert {t["scope"] for t in turns} == {"project:shop-1a2b3c4d"} and len(turns) == 4
    again = (await rig.result("memory_ingest", source="claude-code", path=str(file),
                              scope="project:shop-1a2b3c4d"))["reports"][0]
    assert (again["added"], again["unchanged"]) == (0, 4)
    whole = (await rig.result("memory_ingest", source="claude-code", path=str(home),
                              scope="project:shop-1a2b3c4d"))["reports"][0]
    assert (whole["added"], whole["unchanged"]) == (1, 4)  # only the other session is new
    elsewhere = tmp_path / "loose.jsonl"
    elsewhere.write_text("{}\n")
    error = await rig.error("memory_ingest", source="claude-code", path=str(elsewhere))
    assert "not one of claude-code's transcripts" in error["message"]
    error = await rig.error("memory_ingest", source="obsidian", path=str(file))
    assert "obsidian reads a folder" in error["message"]


async def test_gemini_chats_become_turns_once(rig, tmp_path) -> None:
    home = _copy("gemini", tmp_path)
    report = (await rig.result("memory_ingest", source="gemini", path=str(home)))["reports"][0]
    assert report["added"] == 6 and len(report["failed"]) == 1
    again = (await rig.result("memory_ingest", source="gemini", path=str(home)))["reports"][0]
    assert (again["added"], again["unchanged"]) == (0, 6)


async def test_the_block_memoryd_gave_is_not_learned_again(rig, tmp_path) -> None:
    home = tmp_path / "claude"
    folder = home / "projects" / "-work-app"
    folder.mkdir(parents=True)
    block = "<memory>\n[SEMANTIC] The user lives in Paris.\n</memory>"
    lines = [{"type": "user", "uuid": "u1", "sessionId": "s1", "message": {
                 "role": "user", "content": f"{block}\nPlease rename the build script."}},
             {"type": "user", "uuid": "u2", "sessionId": "s1", "message": {
                 "role": "user", "content": block}}]
    (folder / "s1.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    report = (await rig.result("memory_ingest", source="claude-code",
                               path=str(home)))["reports"][0]
    assert report["added"] == 1
    assert report["skipped"][0]["reason"] == "only the <memory> block memoryd gave"
    (turn,) = (await rig.result("memory_list", source="ingest:claude-code"))["memories"]
    assert turn["content"] == "Please rename the build script."


@pytest.mark.parametrize(("source", "transcript", "turns"), [
    ("claude-code", "claude/projects/-home-ada-shop/7f3c2a10-1b2c-4d5e-8f90-123456789abc.jsonl",
     4),
    ("codex", "codex/sessions/2025/06/02/rollout-2025-06-02T09-00-00-0197a1b2-c3d4-7e5f-"
              "8a9b-0c1d2e3f4a5b.jsonl", 4),
    ("gemini", "gemini/tmp/9f2c41d6e0/chats/session-2026-11-20T09-14-0a1b2c3d.jsonl", None)])
async def test_one_hostile_transcript_line_fails_alone(rig, tmp_path, source, transcript,
                                                       turns) -> None:
    """A line nested past any decoder's depth and a turn of 3 million characters: each is
    reported as failed with its line, the others are read, and the huge one costs no
    rule's pass over it (refused on its length first)."""
    name = transcript.split("/", 1)[0]
    clean = (await rig.result("memory_ingest", source=source,
                              path=str(_copy(name, tmp_path / "clean"))))["reports"][0]
    home = _copy(name, tmp_path / "hostile")
    file = home / transcript.split("/", 1)[1]
    nested = "[" * 200_000 + "]" * 200_000
    huge = "word " * 600_000
    deep = '"DEEP"'  # where the nested value goes in each source's line
    lines = {"claude-code": [json.dumps({"type": "user", "message": {
                                 "role": "user", "content": "DEEP"}}).replace(deep, nested),
                             json.dumps({"type": "user", "sessionId": "7f3c2a10-1b2c-4d5e-"
                                         "8f90-123456789abc", "message": {"role": "user",
                                                                          "content": huge}})],
             "codex": [json.dumps({"type": "response_item", "payload": "DEEP"}).replace(
                 deep, nested),
                       json.dumps({"type": "response_item", "payload": {
                           "type": "message", "role": "user",
                           "content": [{"type": "input_text", "text": huge}]}})],
             "gemini": [json.dumps({"id": "m9", "type": "user", "content": "DEEP"}).replace(
                 deep, nested),
                        json.dumps({"id": "m10", "type": "user", "content": [{"text": huge}]})]}
    with file.open("a") as out:
        out.write("\n".join(lines[source]) + "\n")
    report = (await rig.result("memory_ingest", source=source, path=str(home)))["reports"][0]
    assert report["added"] == 0 and report["unchanged"] == clean["added"]  # the others read
    assert turns is None or clean["added"] == turns
    reasons = [group["reason"] for group in report["failed"]]
    assert "not read: JSON nested too deeply" in reasons
    assert any("characters, more than a memory holds (262,144)" in r for r in reasons)


LONG_SESSION = "5b1e0c2a-7d3f-4e8a-9b6c-0a1b2c3d4e5f"


def claude_code_lines(turns: int, session: str = LONG_SESSION) -> list[str]:
    """`turns` lines of a Claude Code transcript, user and assistant in turn, each a
    distinct sentence."""
    return [json.dumps({
        "type": role, "sessionId": session, "uuid": f"line-{n}",
        "timestamp": f"2025-06-01T10:{n // 60:02d}:{n % 60:02d}.000Z",
        "message": {"role": role, "content": f"Turn {n}: the {role} talks about "
                    f"invoice batch {n * 7919 % 1000} and its refund window of {n} days."}})
        for n, role in ((n, "user" if n % 2 == 0 else "assistant") for n in range(turns))]


def _long_transcript(home: Path, turns: int) -> Path:
    """A Claude Code transcript of `turns` lines under `home` (~/.claude)."""
    folder = home / "projects" / "-home-ada-shop"
    folder.mkdir(parents=True)
    (folder / f"{LONG_SESSION}.jsonl").write_text("\n".join(claude_code_lines(turns)) + "\n")
    return home


async def test_a_line_stored_once_is_never_stored_again_wherever_its_turn_went(tmp_path):
    """Turns evicted past the session's cap go to the trash; the next Stop, and the one
    after a catalog made anew, store none of their lines again."""
    from tests.rig import Rig

    root, home = tmp_path / "root", _long_transcript(tmp_path / "claude", 40)
    rig = Rig(root, {"conversation": {"max_entries": 10}})
    await rig.start()
    first = (await rig.result("memory_ingest", source="claude-code", path=str(home)))
    stored = first["added"]
    assert stored > 20, first
    await rig.engine.learning.drain()  # the background path evicts past the cap
    live = (await rig.result("memory_list", source="ingest:claude-code", limit=100))
    assert live["total"] <= 10  # the rest went to the trash
    for _ in range(2):  # Claude Code fires Stop after every turn
        again = await rig.result("memory_ingest", source="claude-code", path=str(home))
        assert again["added"] == 0 and again["unchanged"] == stored, again
    rig.close()
    catalogs = list((root / "index").glob("keyword.sqlite*"))
    assert catalogs
    for catalog in catalogs:
        catalog.unlink()
    rebuilt = Rig(root, {"conversation": {"max_entries": 10}})
    await rebuilt.start()
    after = await rebuilt.result("memory_ingest", source="claude-code", path=str(home))
    assert after["added"] == 0 and after["unchanged"] == stored, after
    rebuilt.close()


async def test_the_file_systems_root_is_not_ingested(rig) -> None:
    error = await rig.error("memory_ingest", source="claude-code", path="/")
    assert error["code"] == -32602 and "file system's root" in error["message"]


async def test_a_sparse_transcript_is_skipped_not_read(rig, tmp_path) -> None:
    """A 250 MB transcript that is mostly holes (truncated up, never written) is skipped
    with its reason, not read into memory; the session's real transcript beside it is."""
    home = _long_transcript(tmp_path / "claude", 4)
    folder = home / "projects" / "-home-ada-shop"
    with open(folder / "0d1e2f30-4a5b-4c6d-8e9f-a0b1c2d3e4f5.jsonl", "wb") as out:
        out.truncate(250 * 1024 * 1024)
    result = await rig.result("memory_ingest", source="claude-code", path=str(home))
    report = result["reports"][0]
    assert report["added"] == 4
    skipped = [s for group in report["skipped"] for s in group.get("paths", [])]
    reasons = [group["reason"] for group in report["skipped"]]
    assert any("a sparse file" in r for r in reasons), report["skipped"]
    assert skipped
