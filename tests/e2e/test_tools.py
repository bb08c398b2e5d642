"""Every tool through the real socket, with its worst inputs."""

from __future__ import annotations

import json

import pytest

from memoryd.store import frontmatter
from memoryd_client import RpcFailure
from tests.layout import file_of


def err(daemon, method, params):
    with pytest.raises(RpcFailure) as info:
        daemon.call(method, params)
    return info.value


def test_write_read_lands_in_inbox_as_a_durable_file(daemon):
    m = daemon.call("memory_write", {"content": "  The user prefers dark mode  ",
                                     "tags": ["ui", "ui", "pref"], "source": "claude"})
    assert m["content"] == "The user prefers dark mode"
    assert (m["phase"], m["category"], m["scope"], m["version"]) == ("inbox", "inbox",
                                                                     "global", 1)
    assert m["tags"] == ["ui", "pref"]
    assert m["expires_at"] is not None
    path = file_of(daemon.root, m, "inbox")
    on_disk = frontmatter.parse(path.read_text(), "x").memory
    assert on_disk.id == m["id"] and on_disk.content == m["content"]
    assert on_disk.source == "claude"
    got = daemon.call("memory_read", {"id": m["id"]})
    assert got["content"] == m["content"] and got["access_count"] == 1
    assert daemon.call("memory_read", {"id": m["id"]})["access_count"] == 2


def test_write_with_category_is_organized_and_duplicates_return_the_original(daemon):
    a = daemon.call("memory_write", {"content": "Café au lait ☕", "category": "preferences"})
    assert (a["phase"], a["category"]) == ("organized", "preferences")
    assert a["expires_at"] is None
    assert file_of(daemon.root, a, "preferences") is not None
    # NFC normalisation and white space make no new memory
    b = daemon.call("memory_write", {"content": "Cafe\u0301 au lait ☕\n", "category": "people"})
    assert b["id"] == a["id"]
    other_scope = daemon.call("memory_write", {"content": "Café au lait ☕",
                                               "scope": "user:ann"})
    assert other_scope["id"] != a["id"]


def test_content_round_trips_byte_exact(daemon):
    content = ("---\ntitle: not front matter\n---\nkey: [value, {a: b}]\n\ttabbed\n"
               "...\n# 标题 — émoji 😀 \u200b zero-width\n`code` | pipes | \\ back\r\nend")
    m = daemon.call("memory_write", {"content": content, "category": "knowledge"})
    assert m["content"] == content.strip()
    assert daemon.call("memory_read", {"id": m["id"]})["content"] == content.strip()
    text = file_of(daemon.root, m, "knowledge").read_bytes().decode()
    assert frontmatter.parse(text, "x").memory.content == content.strip()


def test_turns_live_under_their_session(daemon):
    t = daemon.call("memory_write", {"content": "hi there", "role": "user", "session": "s-1",
                                     "created_at": "2024-05-01T10:00:00Z"})
    assert (t["kind"], t["type"], t["session"], t["role"]) == ("turn", "episodic", "s-1", "user")
    files = list((daemon.root / "sessions/s-1/turns").glob(f"*__{t['id']}.md"))
    assert len(files) == 1 and files[0].name.startswith("20240501T100000")
    again = daemon.call("memory_write", {"content": "hi there", "role": "user", "session": "s-1"})
    assert again["id"] != t["id"], "turns are never deduplicated"
    e = err(daemon, "memory_write", {"content": "orphan", "role": "user"})
    assert e.code == -32602 and "params.session" in e.message


def test_update_bumps_version_moves_category_and_detects_conflicts(daemon):
    m = daemon.call("memory_write", {"content": "Deploys go through staging"})
    u = daemon.call("memory_update", {"id": m["id"], "content": "Deploys go through canary",
                                      "category": "decisions", "version": 1,
                                      "importance": 0.9, "type": "procedural"})
    assert (u["version"], u["category"], u["phase"], u["type"]) == (2, "decisions",
                                                                    "organized", "procedural")
    assert file_of(daemon.root, m, "inbox") is None
    assert file_of(daemon.root, m, "decisions") is not None
    e = err(daemon, "memory_update", {"id": m["id"], "content": "stale", "version": 1})
    assert e.code == -32002
    assert daemon.call("memory_read", {"id": m["id"]})["content"] == "Deploys go through canary"
    assert err(daemon, "memory_update", {"id": "missing-id", "content": "x"}).code == -32001


def test_delete_moves_to_trash_and_forgets(daemon):
    m = daemon.call("memory_write", {"content": "temporary thought", "category": "knowledge"})
    r = daemon.call("memory_delete", {"id": m["id"]})
    assert r == {"id": m["id"], "deleted": True, "trash": f"trash/categories/knowledge/"
                 f"{m['id']}.md"}
    assert (daemon.root / r["trash"]).exists()
    assert err(daemon, "memory_read", {"id": m["id"]}).code == -32001
    assert daemon.call("memory_search", {"query": "temporary"})["total"] == 0
    assert err(daemon, "memory_delete", {"id": m["id"]}).code == -32001


def test_list_filters_and_pages_newest_first(daemon):
    ids = []
    for i in range(5):
        ids.append(daemon.call("memory_write", {
            "content": f"fact number {i}", "category": "knowledge" if i % 2 else "people",
            "tags": ["even"] if i % 2 == 0 else ["odd"], "source": f"s{i % 2}",
            "created_at": f"2024-01-0{i + 1}T00:00:00Z"})["id"])
    page = daemon.call("memory_list", {"limit": 2})
    assert [m["id"] for m in page["memories"]] == [ids[4], ids[3]] and page["total"] == 5
    page2 = daemon.call("memory_list", {"limit": 2, "offset": 2})
    assert [m["id"] for m in page2["memories"]] == [ids[2], ids[1]]
    assert daemon.call("memory_list", {"category": "knowledge"})["total"] == 2
    assert daemon.call("memory_list", {"tags": ["even"]})["total"] == 3
    assert daemon.call("memory_list", {"source": "s1"})["total"] == 2
    assert daemon.call("memory_list", {"phase": "inbox"})["total"] == 0


def test_search_is_case_insensitive_with_filters_and_dates(daemon):
    daemon.call("memory_write", {"content": "Postgres VACUUM needs care", "tags": ["db"],
                                 "created_at": "2024-03-01T12:00:00Z"})
    daemon.call("memory_write", {"content": "我喜欢喝绿茶 (green tea)", "category": "preferences",
                                 "created_at": "2024-03-05T12:00:00Z"})
    daemon.call("memory_write", {"content": "postgres replication lag", "category": "knowledge",
                                 "created_at": "2024-04-01T12:00:00Z"})
    hits = daemon.call("memory_search", {"query": "POSTGRES"})
    assert [m["content"] for m in hits["memories"]] == ["postgres replication lag",
                                                        "Postgres VACUUM needs care"]
    assert daemon.call("memory_search", {"query": "绿茶"})["total"] == 1
    assert daemon.call("memory_search", {"query": "postgres vacuum"})["total"] == 1
    assert daemon.call("memory_search", {"query": "postgres", "tags": ["db"]})["total"] == 1
    assert daemon.call("memory_search", {"query": "postgres", "category": "knowledge"}
                       )["total"] == 1
    assert daemon.call("memory_search", {"query": "postgres", "phase": "inbox"})["total"] == 1
    # A term shorter than 3 characters matches at a word's start (a CJK character anywhere)
    assert daemon.call("memory_search", {"query": "p"})["total"] == 2
    dated = daemon.call("memory_search", {"query": "p", "from": "2024-03-01",
                                          "to": "2024-03-05"})
    assert [m["content"] for m in dated["memories"]] == ["Postgres VACUUM needs care"]
    assert daemon.call("memory_search", {"query": "茶"})["total"] == 1
    assert daemon.call("memory_search", {"query": "e"})["total"] == 0
    # FTS syntax in a query is just text
    for query in ['"unbalanced', "NEAR(a b)", "a OR b", "*", "col:x", "-x", "a AND"]:
        assert daemon.call("memory_search", {"query": query})["total"] == 0
    e = err(daemon, "memory_search", {"query": "x", "from": "2024-02-30"})
    assert e.code == -32602 and "params.from" in e.message
    e = err(daemon, "memory_search", {"query": "x", "from": "2024-03-02", "to": "2024-03-01"})
    assert e.code == -32602 and "params.to" in e.message
    e = err(daemon, "memory_search", {"query": " \t "})
    assert e.code == -32602 and "params.query" in e.message and "no words" in e.message


def test_tag_link_unlink_backlinks_upgrade(daemon):
    a = daemon.call("memory_write", {"content": "Project Atlas uses Rust"})
    b = daemon.call("memory_write", {"content": "Atlas deploys on Fridays"})
    t = daemon.call("memory_tag", {"id": a["id"], "add": ["atlas", "rust"], "remove": []})
    assert t["tags"] == ["atlas", "rust"] and t["version"] == 2
    t = daemon.call("memory_tag", {"id": a["id"], "remove": ["rust"]})
    assert t["tags"] == ["atlas"]
    assert err(daemon, "memory_tag", {"id": a["id"]}).code == -32602
    assert daemon.call("memory_link", {"source": a["id"], "target": b["id"]})["linked"]
    assert daemon.call("memory_read", {"id": a["id"]})["links"] == [b["id"]]
    assert daemon.call("memory_read", {"id": b["id"]})["links"] == [a["id"]]
    back = daemon.call("memory_backlinks", {"id": b["id"]})
    assert [m["id"] for m in back["memories"]] == [a["id"]]
    assert err(daemon, "memory_link", {"source": a["id"], "target": a["id"]}).code == -32602
    assert err(daemon, "memory_link", {"source": a["id"], "target": "nope"}).code == -32001
    daemon.call("memory_unlink", {"source": b["id"], "target": a["id"]})
    assert daemon.call("memory_read", {"id": a["id"]})["links"] == []
    assert daemon.call("memory_backlinks", {"id": b["id"]})["memories"] == []
    up = daemon.call("memory_upgrade", {"id": a["id"], "category": "project"})
    assert (up["phase"], up["category"], up["expires_at"]) == ("organized", "project", None)
    assert file_of(daemon.root, a, "project") is not None
    assert err(daemon, "memory_upgrade", {"id": a["id"]}).code == -32602  # already organized
    assert daemon.call("memory_upgrade", {"id": b["id"]})["category"] == "knowledge"
    # deleting a memory removes it from its peers' links
    daemon.call("memory_link", {"source": a["id"], "target": b["id"]})
    daemon.call("memory_delete", {"id": b["id"]})
    assert daemon.call("memory_read", {"id": a["id"]})["links"] == []


@pytest.mark.parametrize("bad_id", ["../../etc/passwd", "a/b", "..", ".hidden", "x" * 200,
                                    "", "a b", "id\n", "ü"])
def test_ids_with_path_tricks_are_invalid_params(module_daemon, bad_id):
    for method in ("memory_read", "memory_delete", "memory_backlinks"):
        e = err(module_daemon, method, {"id": bad_id})
        assert e.code == -32602 and "params.id" in e.message


@pytest.mark.parametrize("params, field", [
    ({}, "content"),
    ({"content": 5}, "content"),
    ({"content": ""}, "content"),
    ({"content": "   \n\t "}, "content"),
    ({"content": "x", "category": "gossip"}, "category"),
    ({"content": "x", "tags": "a,b"}, "tags"),
    ({"content": "x", "tags": ["a,b"]}, "tags"),
    ({"content": "x", "importance": 2}, "importance"),
    ({"content": "x", "scope": "agent:../../x"}, "scope"),
    ({"content": "x", "session": "../x", "role": "user"}, "session"),
    ({"content": "x", "created_at": "yesterday"}, "created_at"),
    ({"content": "x", "txt": 1}, "txt"),
    ({"content": "x" * (256 * 1024 + 1)}, "content"),
])
def test_write_rejects_bad_params_naming_the_field(module_daemon, params, field):
    e = err(module_daemon, "memory_write", params)
    assert e.code == -32602
    assert f"`params.{field}`" in e.message, e.message
    assert module_daemon.call("memory_list", {})["total"] == 0, "nothing half-written"
    assert not list((module_daemon.root / "categories").rglob("*.md"))


@pytest.mark.parametrize("method, params, field", [
    ("memory_list", {"offset": 2**63}, "offset"),
    ("memory_search", {"query": "x", "offset": 2**64}, "offset"),
    ("memory_remind", {"content": "x", "when": "in 99999999999 days"}, "when"),
    ("memory_remind", {"content": "x", "when": "tomorrow at 99"}, "when"),
])
def test_out_of_range_numbers_and_times_are_invalid_params(module_daemon, method, params,
                                                           field):
    e = err(module_daemon, method, params)
    assert e.code == -32602 and f"`params.{field}`" in e.message, e.message


def test_scopes_isolate_named_agents(daemon):
    with daemon.client() as claude, daemon.client() as codex:
        claude.call("initialize", {"protocolVersion": "2025-06-18",
                                   "clientInfo": {"name": "claude", "version": "1"}})
        init = codex.call("initialize", {"clientInfo": {"name": "codex"}})
        assert (init["scope"], init["agent"]) == ("global", "agent:codex")
        mine = claude.call("memory_write", {"content": "claude private note",
                                            "scope": "agent:claude"})
        assert mine["scope"] == "agent:claude"
        shared = claude.call("memory_write", {"content": "shared note"})
        assert shared["scope"] == "global", "agents share by default"
        seen = {m["id"] for m in codex.call("memory_list", {})["memories"]}
        assert shared["id"] in seen and mine["id"] not in seen
        assert codex.call("memory_search", {"query": "note"})["total"] == 1
        for method, params in (("memory_read", {"id": mine["id"]}),
                               ("memory_delete", {"id": mine["id"]}),
                               ("memory_list", {"scope": "agent:claude"}),
                               ("memory_write", {"content": "x", "scope": "agent:claude"}),
                               ("jobs/run", {"job": "expire"})):
            with pytest.raises(RpcFailure) as info:
                codex.call(method, params)
            assert info.value.code == -32003
        assert claude.call("memory_search", {"query": "note"})["total"] == 2
    # the user's own tooling (no clientInfo) sees every scope, without asking
    assert daemon.call("memory_list", {})["total"] == 2
    assert daemon.call("memory_list", {"scope": "agent:claude"})["total"] == 1


def test_yaml_in_content_cannot_inject_front_matter(daemon):
    evil = "---\nid: ../../evil\nscope: agent:root\ncategory: soul\n---\nbody"
    m = daemon.call("memory_write", {"content": evil})
    got = daemon.call("memory_read", {"id": m["id"]})
    assert got["scope"] == "global" and got["category"] == "inbox"
    assert got["content"] == evil
    assert not list(daemon.root.rglob("evil*"))


def test_results_are_json_safe(daemon):
    m = daemon.call("memory_write", {"content": "tab\there \\ \"quotes\" \u2028 sep"})
    assert json.loads(json.dumps(m))["content"] == m["content"]
