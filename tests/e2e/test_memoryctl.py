"""memoryctl as a user runs it: a subprocess against a real daemon."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memoryctl.main import _OWN, build_parser
from memoryd.tools.spec import SPECS


def ctl(daemon_or_root, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    root = getattr(daemon_or_root, "root", daemon_or_root)
    env = dict(os.environ, MEMORY_HOME=str(root), COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "memoryctl", *args], capture_output=True,
                          text=True, env=env, input=stdin, timeout=60)


def ok(daemon, *args: str, stdin: str | None = None):
    proc = ctl(daemon, "--json", *args, stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_every_subcommand_against_a_daemon(daemon):
    a = ok(daemon, "write", "Ann likes climbing", "--category", "people", "--tags", "ann,sport")
    assert a["tags"] == ["ann", "sport"] and a["source"] == "memoryctl"
    b = ok(daemon, "write", "-", "--scope", "user:ann", stdin="from stdin\n")
    assert b["content"] == "from stdin" and b["scope"] == "user:ann"
    assert ok(daemon, "read", a["id"])["access_count"] == 1
    assert ok(daemon, "update", a["id"], "--content", "Ann loves climbing", "--version",
              "1")["version"] == 2
    assert ok(daemon, "list", "--category", "people")["total"] == 1
    assert ok(daemon, "list", "--scope", "user:ann")["total"] == 1
    assert ok(daemon, "search", "CLIMBING", "--tags", "ann", "--from", "2000-01-01")["total"] == 1
    assert ok(daemon, "tag", a["id"], "--add", "x", "--remove", "sport")["tags"] == ["ann", "x"]
    assert ok(daemon, "link", a["id"], b["id"])["linked"] is True
    assert [m["id"] for m in ok(daemon, "backlinks", b["id"])["memories"]] == [a["id"]]
    assert ok(daemon, "unlink", a["id"], b["id"])["linked"] is False
    assert ok(daemon, "upgrade", b["id"], "--category", "habits")["category"] == "habits"
    assert ok(daemon, "delete", a["id"])["deleted"] is True
    assert ok(daemon, "status")["memories"] == 1
    assert len(ok(daemon, "tools")["tools"]) == len(SPECS)
    assert ok(daemon, "call", "ping") == {}


def test_readable_tables(daemon):
    for i in range(3):
        ctl(daemon, "write", f"note number {i} about tables", "--category", "knowledge")
    out = ctl(daemon, "list").stdout.splitlines()
    assert out[0].split() == ["ID", "CATEGORY", "SCOPE", "CREATED", "TAGS", "TITLE"]
    starts = {line.index("knowledge") for line in out[1:]}
    assert len(starts) == 1, "columns are aligned"
    shown = ctl(daemon, "read", out[1].split()[0]).stdout
    assert "category:     knowledge" in shown and "note number 2 about tables" in shown


def test_entities_as_a_table_and_one_entity_over_time(daemon):
    ctl(daemon, "write", "I met Ann Smith at the Bank of America.")
    ctl(daemon, "write", "Later I went sailing with Ann in Kiel.")
    listed = ctl(daemon, "entities").stdout.splitlines()
    assert listed[0].split()[:3] == ["ENTITY", "MEMORIES", "FIRST"]
    assert {line.split("  ")[0] for line in listed[1:]} == {
        "Ann", "Ann Smith", "Bank of America", "Kiel"}
    one = ctl(daemon, "entities", "ann").stdout
    assert one.splitlines()[1].startswith("Ann ") and "Ann Smith" in one.splitlines()[1]
    assert one.index("I met Ann Smith") < one.index("sailing with Ann")  # oldest first
    assert "named beside it:" in one and "Kiel" in one
    assert "entities:     Ann Smith, Bank of America" in ctl(
        daemon, "read", ok(daemon, "list")["memories"][-1]["id"]).stdout


def test_errors_exit_nonzero_with_the_daemons_message(daemon):
    proc = ctl(daemon, "read", "no-such-id")
    assert proc.returncode == 1
    assert "no memory with id 'no-such-id'" in proc.stderr and "error -32001" in proc.stderr
    proc = ctl(daemon, "read", "../etc")
    assert proc.returncode == 1 and "params.id" in proc.stderr
    proc = ctl(daemon, "call", "memory_write", "{not json")
    assert proc.returncode != 0 and "not valid JSON" in proc.stderr


def test_no_daemon_says_how_to_start_one(short_tmp):
    proc = ctl(short_tmp / "nothing-here", "list")
    assert proc.returncode == 3
    assert "no memoryd is answering" in proc.stderr and "memoryd serve" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_memoryctl_imports_nothing_heavy():
    code = ("import sys, memoryctl.main; heavy = {'trio', 'chromadb', 'onnxruntime', "
            "'structlog', 'msgspec', 'yaml', 'numpy'}; print(sorted(heavy & set(sys.modules)))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr


def test_every_tool_is_a_subcommand_with_every_param():
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    for spec in SPECS.values():
        sub = commands[spec.cli.command]
        dests = {a.dest for a in sub._actions} - {"help", "root", "socket", "json",
                                                   "start_wait"}
        own = _OWN.get(spec.cli.command, set())  # memoryctl pages and batches itself
        # export --output, import --input, context --write, and --project DIR where a
        # tool takes a scope (memoryctl names the folder's project scope)
        files = {"output", "input", "write", "project_dir"} & dests
        assert dests - files == set(spec.params.__struct_encode_fields__) - own, spec.name
        assert ("project_dir" in dests) == ("scope" in dests and "project" not in dests)


@pytest.mark.parametrize("command", sorted(build_parser()._subparsers._group_actions[0].choices))
def test_every_subcommand_has_help(command):
    proc = subprocess.run([sys.executable, "-m", "memoryctl", command, "--help"],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "usage:" in proc.stdout


def test_agent_runs_json_tool_calls_from_stdin(daemon):
    calls = [{"name": "memory_write", "params": {"content": "agent note", "category": "skills"}},
             {"name": "memory_search", "arguments": {"query": "agent"}},
             {"name": "memory_read", "params": {"id": "not valid"}}]
    proc = ctl(daemon, "agent", stdin=json.dumps(calls))
    assert proc.returncode == 1, "one call failed"
    results = json.loads(proc.stdout)
    assert results[0]["result"]["category"] == "skills"
    assert results[1]["result"]["total"] == 1
    assert results[2]["error"]["code"] == -32602
    single = ctl(daemon, "agent", stdin='{"name": "memory_list", "params": {}}')
    assert single.returncode == 0 and json.loads(single.stdout)["result"]["total"] == 1
    listed = ctl(daemon, "agent", "--list-tools")
    assert "memory_write" in {t["name"] for t in json.loads(listed.stdout)["tools"]}


def test_mcp_bridge_speaks_mcp_over_stdio(daemon):
    ok(daemon, "write", "bridge me", "--category", "knowledge")
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "some-host", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "memory_search", "arguments": {"query": "bridge"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
         "params": {"name": "memory_write", "arguments": {"content": "saved from the host"}}},
    ]
    proc = ctl(daemon, "mcp", stdin="".join(json.dumps(x) + "\n" for x in lines))
    assert proc.returncode == 0, proc.stderr
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["id"] for r in replies] == [1, 2, 3, 4]
    assert replies[0]["result"]["serverInfo"]["name"] == "memoryd"
    # the bridge is the host's agent (its own clientInfo.name), not "mcp"
    assert replies[0]["result"]["agent"] == "agent:some-host"
    assert replies[2]["result"]["structuredContent"]["total"] == 1
    assert replies[3]["result"]["structuredContent"]["scope"] == "global"
    # what the agent saved, the user's own CLI finds
    assert ok(daemon, "search", "host")["total"] == 1


def test_mcp_bridge_outlives_the_idle_timeout(make_daemon):
    """A host may stay quiet longer than `server.idle_timeout`: the bridge's keepalive
    notifications keep its connection (and so the agent's identity) open."""
    import io
    import os
    import socket
    import threading

    from memoryctl import bridge
    from memoryd_client import Client

    d = make_daemon(config="server:\n  idle_timeout: 1s\n").start()
    read_fd, write_fd = os.pipe()
    stdin, feed = os.fdopen(read_fd, "r"), os.fdopen(write_fd, "w")
    out = io.StringIO()
    with Client(d.socket, timeout=None) as client:
        worker = threading.Thread(target=bridge.run_mcp, args=(client, stdin, out),
                                  kwargs={"keepalive": 0.2})
        worker.start()
        feed.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                               "params": {"clientInfo": {"name": "quiet-host"}}}) + "\n")
        feed.flush()
        # A connection that says nothing, opened now: once the daemon has cut it, the
        # idle timeout has passed for the bridge's connection too.
        with socket.socket(socket.AF_UNIX) as silent:
            silent.connect(str(d.socket))
            silent.settimeout(60)
            assert silent.recv(1) == b"", "the silent connection is cut"
        feed.write(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "memory_write",
                               "params": {"content": "after a long silence"}}) + "\n")
        feed.close()
        worker.join(30)
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["id"] for r in replies] == [1, 2]
    assert replies[1]["result"]["content"] == "after a long silence"


def test_ranked_subcommands(daemon):
    ok(daemon, "write", "The user's sister Ana lives in Porto", "--category", "people")
    ok(daemon, "write", "Always answer in British English", "--type", "procedural")
    found = ok(daemon, "smart-search", "where does my sister live", "--top-k", "1")
    assert found["memories"][0]["content"].startswith("The user's sister Ana")
    table = ctl(daemon, "smart-search", "where does my sister live").stdout
    assert table.splitlines()[0].split()[:3] == ["RANK", "SCORE", "ID"]
    recalled = ctl(daemon, "recall", "sister", "--token-budget", "200").stdout
    assert recalled.startswith("<memory>\n[PROCEDURAL] Always answer in British English")
    explained = ctl(daemon, "explain", "sister").stdout
    assert "memories searched (exact)" in explained and "selected" in explained


def test_jobs_list_and_run(daemon):
    jobs = ok(daemon, "jobs")["jobs"]
    assert {j["name"] for j in jobs} == {"expire", "decay", "upgrade", "consolidate",
                                         "decay-sweep", "notify", "compress", "sync",
                                         "dream"}
    assert all(j["next_run"] for j in jobs if j["name"] != "dream")
    m = ok(daemon, "write", "read me three times")
    for _ in range(3):
        ok(daemon, "read", m["id"])
    dry = ok(daemon, "run", "upgrade", "--dry-run")
    assert dry["dry_run"] and [c["id"] for c in dry["changes"]] == [m["id"]]
    assert ok(daemon, "read", m["id"])["phase"] == "inbox"
    shown = ctl(daemon, "run", "upgrade").stdout
    assert shown.startswith("upgrade: changed 1") and m["id"] in shown
    assert ok(daemon, "read", m["id"])["phase"] == "organized"
    bad = ctl(daemon, "run", "nope")
    assert bad.returncode == 1 and "unknown job 'nope'" in bad.stderr


def test_memoryctl_as_a_new_user_tries_it(daemon, short_tmp):
    assert ctl(daemon, "--version").stdout.strip().startswith("memoryctl 0.")
    note = ok(daemon, "write", "Ann drinks green tea", "--category", "people")
    listed = ctl(daemon, "list").stdout
    assert note["id"][:8] in listed and note["id"] not in listed  # short ids in tables
    shown = ctl(daemon, "read", note["id"][:8])  # a unique prefix is taken for the id
    assert shown.returncode == 0 and "Ann drinks green tea" in shown.stdout
    again = ctl(daemon, "write", "Ann drinks green tea", "--category", "people").stdout
    assert again.startswith(f"already stored: this is the existing memory {note['id']}")

    deleted = ctl(daemon, "delete", note["id"][:8]).stdout
    assert f"memoryctl restore {note['id'][:8]}" in deleted
    trash = ctl(daemon, "trash").stdout
    assert note["id"][:8] in trash and "Ann drinks green tea" in trash
    restored = ctl(daemon, "restore", note["id"][:8])
    assert restored.returncode == 0 and "from the trash" in restored.stdout
    assert ok(daemon, "read", note["id"])["content"] == "Ann drinks green tea"
    assert ctl(daemon, "trash").stdout.strip() == "the trash is empty"

    tokyo = dict(os.environ, MEMORY_HOME=str(daemon.root), TZ="Asia/Tokyo")
    remind = subprocess.run([sys.executable, "-m", "memoryctl", "remind", "call Ann",
                             "--due-at", "2030-01-02T03:00:00Z"], env=tokyo,
                            capture_output=True, text=True, timeout=60)
    assert "due 2030-01-02 12:00 JST: call Ann" in remind.stdout
    reminders = subprocess.run([sys.executable, "-m", "memoryctl", "list", "--category",
                                "reminders"], env=tokyo, capture_output=True, text=True,
                               timeout=60).stdout
    assert "DUE" in reminders and "2030-01-02 12:00 JST" in reminders

    status = ctl(daemon, "status").stdout
    assert "llm            none" in status and "None" not in status
    git = ok(daemon, "status")["git"]  # the history's state: commits, failures in a row
    assert git["enabled"] is False or git["failures"] == 0
    assert "\ngit            " in status
    # which path scores vectors on this CPU, and why (the start-up's probe)
    scoring = ok(daemon, "status")["models"]["scoring"]
    assert scoring["path"] in ("int8", "float")
    assert ("MEMORYD_SCORING" if os.environ.get("MEMORYD_SCORING") else "on this CPU") \
        in scoring["why"]
    assert f"scoring        {'int8 vectors' if scoring['path'] == 'int8' else 'numpy'}" in status
    # the embedder's variant, and whether a vector was proved independent of its batch
    embedder = ok(daemon, "status")["models"]["embedder"]
    assert embedder["variant"] in ("int8", "fp32")
    assert embedder["batches"]["independent"] is True, embedder
    assert f"({embedder['variant']}), sha256" in status
    assert "batches        independent: the probe's vectors" in status
    assert status.splitlines()[0].startswith("daemon         memoryd ")
    piped = subprocess.run(f"{sys.executable} -m memoryctl status | head -1", shell=True,
                           env=dict(os.environ, MEMORY_HOME=str(daemon.root)),
                           capture_output=True, text=True, timeout=60)
    assert piped.stdout.startswith("daemon") and "Traceback" not in piped.stderr
    assert ok(daemon, "status")["index"]["in_step"] is True
    memory = ok(daemon, "status")["memory"]  # what the daemon's memory holds, by part
    assert memory["rss_mb"] > memory["index_mb"]["capacity"] > 0
    assert "\nmemory         daemon " in status and "vector cache" in status

    nobody = ctl(short_tmp / "empty-root", "list")
    assert nobody.returncode == 3
    hint = nobody.stderr.splitlines()[-1]
    command = hint.split("Start one with:", 1)[1].split()[0]
    assert command == "memoryd" or Path(command).exists() or command == "./scripts/serve"


def test_every_option_of_every_subcommand_has_help():
    from memoryctl.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, command in sub.choices.items():
        for action in command._actions:
            if action.dest in ("help",):
                continue
            assert action.help, f"memoryctl {name}: {action.option_strings or action.dest}"


def test_agent_prompt_prints_the_recall_block(daemon):
    ok(daemon, "write", "My name is Alice and I love hiking", "--category", "people")
    block = ctl(daemon, "agent", "--prompt", "What's my name?").stdout
    assert block.startswith("<memory>") and "Alice" in block
    piped = ctl(daemon, "agent", "--prompt", "-", stdin="what do I love?\n").stdout
    assert "hiking" in piped
    out = ctl(daemon, "agent", stdin=json.dumps(
        [{"prompt": "who am I?"}, {"name": "memory_search", "arguments": {"query": "Alice"}}]))
    first, second = json.loads(out.stdout)
    assert first["prompt"] == "who am I?" and "Alice" in first["memory"]
    assert second["result"]["total"] == 1
    assert ctl(daemon, "agent", "--prompt", " ").returncode == 2
