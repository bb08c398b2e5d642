"""Sync through a git remote, engine to engine: two (or three) real roots, each with
its real git history, and one bare repository as the remote, all on this machine.
What came in is indexed; two machines' edits of one memory become one by the rules
(the higher version wins, the other is kept as a version, an edit beats a delete);
no file ever holds a conflict marker; a file git cannot merge is reported."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from memoryd.history.git import available
from memoryd.history.plan import refusal
from memoryd.protocol.dispatch import Connection
from memoryd.scopes import Caller
from tests.layout import file_of
from tests.rig import Rig

pytestmark = pytest.mark.skipif(not available(), reason="no git binary on this machine")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                          check=True).stdout


def bare(tmp_path: Path) -> Path:
    """An empty remote whose HEAD names `main` (as GitHub's and Gitea's do)."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "--initial-branch=main", str(remote)],
                   check=True)
    return remote


async def machine(tmp_path: Path, name: str, remote: Path | str) -> Rig:
    rig = Rig(tmp_path / name, {"git": {"remote": str(remote)}})
    await rig.start()
    assert rig.engine.git is not None and rig.engine.remote is not None
    await rig.engine.git.start(before_commit=rig.engine.remote.recover)
    return rig


def markers(root: Path) -> list[str]:
    """Files under the root (outside .git) holding a conflict marker."""
    found = []
    for path in root.rglob("*"):
        if ".git" in path.parts or "index" in path.relative_to(root).parts[:1]:
            continue
        if path.is_file() and not path.is_symlink():
            text = path.read_text(errors="replace")
            if "<<<<<<< " in text or "\n>>>>>>> " in text:
                found.append(str(path.relative_to(root)))
    return found


async def sync(rig: Rig) -> dict:
    result = await rig.result("memory_sync")
    assert result["error"] is None, result
    return result


@pytest.fixture
async def pair(tmp_path):
    remote = bare(tmp_path)
    a, b = await machine(tmp_path, "a", remote), await machine(tmp_path, "b", remote)
    yield a, b
    a.close()
    b.close()


async def test_a_memory_written_on_one_machine_is_found_on_the_other(pair) -> None:
    a, b = pair
    m = await a.result("memory_write", content="The deploy key rotates every 90 days",
                       category="knowledge")
    sent = await sync(a)
    assert sent["went_out"] >= 1 and sent["came_in"] == 0
    got = await sync(b)
    assert got["came_in"] >= 1
    read = await b.result("memory_read", id=m["id"])
    assert read["content"] == m["content"] and read["version"] == 1
    hits = await b.result("memory_search", query="deploy key")
    assert [x["id"] for x in hits["memories"]] == [m["id"]]
    # The other way, and nothing to do the second time.
    n = await b.result("memory_write", content="Ann prefers tea", category="people")
    await sync(b)
    await sync(a)
    assert (await a.result("memory_read", id=n["id"]))["content"] == "Ann prefers tea"
    again = await sync(a)
    assert again["came_in"] == 0 and again["went_out"] == 0
    assert git(a.root, "rev-parse", "HEAD") == git(b.root, "rev-parse", "HEAD")


async def test_both_machines_edit_one_memory_the_higher_version_wins(pair) -> None:
    a, b = pair
    m = await a.result("memory_write", content="The office is on floor 3", tags=["office"],
                       category="knowledge")
    await sync(a)
    await sync(b)
    await a.result("memory_update", id=m["id"], content="The office is on floor 4",
                   tags=["office", "a-side"])
    await b.result("memory_update", id=m["id"], content="The office is on floor 5")
    await b.result("memory_update", id=m["id"], content="The office is on floor 6",
                   tags=["office", "b-side"])
    await sync(a)
    merged = await sync(b)
    assert [r["id"] for r in merged["resolved"]] == [m["id"]]
    await sync(a)
    for rig in (a, b):
        read = await rig.result("memory_read", id=m["id"])
        assert read["content"] == "The office is on floor 6" and read["version"] == 3
        assert set(read["tags"]) == {"office", "a-side", "b-side"}  # merged as a set
        history = await rig.result("memory_history", id=m["id"])
        texts = {v["content"] for v in history["versions"]}
        # Every version written anywhere: a's floor 4 too, kept by the merge.
        assert {"The office is on floor 3", "The office is on floor 4",
                "The office is on floor 5", "The office is on floor 6"} <= texts, texts
        assert markers(rig.root) == []
        assert git(rig.root, "status", "--porcelain") == ""
    assert (a.root / file_of(a.root, m["id"])).read_bytes() == \
        (b.root / file_of(b.root, m["id"])).read_bytes()
    # Both machines wrote a version 2 (floor 4 on a, floor 5 on b): restore takes the later.
    restored = await a.result("memory_restore", id=m["id"], version=2)
    assert restored["content"] == "The office is on floor 5" and restored["version"] == 4


async def test_an_edit_beats_a_delete_on_the_other_machine(pair) -> None:
    a, b = pair
    m = await a.result("memory_write", content="Backups run at 2am", category="knowledge")
    await sync(a)
    await sync(b)
    await a.result("memory_delete", id=m["id"])
    await b.result("memory_update", id=m["id"], content="Backups run at 3am")
    await sync(a)
    merged = await sync(b)
    assert merged["resolved"] and merged["resolved"][0]["rule"] == "an edit beats a delete"
    await sync(a)
    for rig in (a, b):
        read = await rig.result("memory_read", id=m["id"])
        assert read["content"] == "Backups run at 3am"
        hits = await rig.result("memory_search", query="backups")
        assert [x["id"] for x in hits["memories"]] == [m["id"]]
        assert markers(rig.root) == []
    # The delete is in the memory's history (the deleted copy kept as a version).
    log = git(a.root, "log", "--format=%s", "--name-status")
    assert "trash/" in log


async def test_a_file_git_cannot_merge_keeps_this_machines_and_is_reported(pair) -> None:
    a, b = pair
    (a.root / "notes.txt").write_text("one\ntwo\nthree\n")
    a.engine.git.changed(["notes.txt"])
    await sync(a)
    await sync(b)
    (a.root / "notes.txt").write_text("one\nTWO from a\nthree\n")
    a.engine.git.changed(["notes.txt"])
    (b.root / "notes.txt").write_text("one\nTWO from b\nthree\n")
    b.engine.git.changed(["notes.txt"])
    await sync(a)
    result = await sync(b)
    assert [n["path"] for n in result["needs_you"]] == ["notes.txt"]
    assert (b.root / "notes.txt").read_text() == "one\nTWO from b\nthree\n"
    assert markers(b.root) == []
    # Status keeps it until this machine's copy changes (the user merged it by hand).
    await sync(b)
    conflicts = (await b.result("stats"))["sync"]["conflicts"]
    assert [c["path"] for c in conflicts] == ["notes.txt"] and conflicts[0]["theirs"]
    # Changes git can merge are merged.
    (a.root / "notes.txt").write_text("zero\none\nTWO from a\nthree\n")
    a.engine.git.changed(["notes.txt"])
    (b.root / "notes.txt").write_text("one\nTWO from b\nthree\nfour\n")
    b.engine.git.changed(["notes.txt"])
    await sync(b)
    await sync(a)
    assert (a.root / "notes.txt").read_text() == "zero\none\nTWO from b\nthree\nfour\n"
    assert (await b.result("stats"))["sync"]["conflicts"] == []


async def test_an_unreachable_remote_is_a_reported_failure_with_backoff(tmp_path) -> None:
    rig = await machine(tmp_path, "a", tmp_path / "no-such-remote.git")
    try:
        result = await rig.result("memory_sync")
        assert result["error"] and "no-such-remote" in result["error"]
        status = (await rig.result("stats"))["sync"]
        assert status["failures"] == 1 and status["retry_at"] is not None
        assert status["last"]["error"] == result["error"]
        skipped = await rig.engine.sync_remote(scheduled=True)
        assert skipped["skipped"] and "backing off" in skipped["reason"]
    finally:
        rig.close()


async def test_credentials_in_the_url_are_never_shown(tmp_path) -> None:
    rig = await machine(tmp_path, "a", "https://someone:s3cret-token@127.0.0.1:9/x.git")
    try:
        result = await rig.result("memory_sync")
        assert result["error"] and "s3cret" not in str(result)
        assert "s3cret" not in str(await rig.result("stats"))
        assert "s3cret" not in (rig.root / ".git" / "config").read_text()
    finally:
        rig.close()


async def test_a_fact_superseded_on_one_machine_and_edited_on_another(pair) -> None:
    a, b = pair
    await a.result("memory_add", text="I live in Paris.")
    await sync(a)
    await sync(b)
    paris = (await b.result("memory_search", query="Paris"))["memories"][0]
    await a.result("memory_add", text="Big news: I moved to Berlin last month.")
    await b.result("memory_update", id=paris["id"], content="The user lives in Paris, France.")
    await sync(a)
    merged = await sync(b)
    assert [r["rule"] for r in merged["resolved"]] == ["a superseded fact stays superseded"]
    await sync(a)
    for rig in (a, b):
        live = (await rig.result("memory_list"))["memories"]
        assert [m["content"] for m in live] == ["The user moved to Berlin last month."]
        history = await rig.result("memory_history", id=paris["id"])
        assert "The user lives in Paris, France." in {v["content"] for v in history["versions"]}
        assert markers(rig.root) == []


def push_from_elsewhere(tmp_path: Path, remote: Path, files: dict[str, str | None],
                        links: dict[str, str] | None = None) -> None:
    """Another machine (a plain git clone) commits these files and pushes."""
    other = tmp_path / "elsewhere"
    if not other.exists():
        subprocess.run(["git", "clone", "-q", str(remote), str(other)], check=True)
    git(other, "pull", "-q", "origin", "main")
    for path, text in files.items():
        (other / path).parent.mkdir(parents=True, exist_ok=True)
        (other / path).write_text(text or "")
    for path, target in (links or {}).items():
        (other / path).parent.mkdir(parents=True, exist_ok=True)
        (other / path).symlink_to(target)
    git(other, "add", "-A", "-f")
    git(other, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "elsewhere")
    git(other, "push", "-q", "origin", "HEAD:main")


async def test_what_memoryd_refuses_from_a_remote_is_reported_and_left_alone(
        tmp_path, monkeypatch) -> None:
    from memoryd.history import plan

    monkeypatch.setattr(plan, "MAX_SYNCED", 4096)
    remote = bare(tmp_path)
    a = await machine(tmp_path, "a", remote)
    try:
        await a.result("memory_write", content="first", category="knowledge")
        await sync(a)
        push_from_elsewhere(tmp_path, remote, {
            "index/keyword.sqlite": "not a database",
            "categories/knowledge/huge.md": "x" * 10_000,
            "categories/knowledge/bad.md": "---\nversion: lots\nkind: [1, 2]\n---\nhostile\n",
            "categories/knowledge/fine.md": "A note written elsewhere\n",
        }, links={"categories/knowledge/passwd.md": "/etc/passwd"})
        result = await sync(a)
        refused = {r["path"]: r["reason"] for r in result["refused"]}
        assert set(refused) == {"index/keyword.sqlite", "categories/knowledge/huge.md",
                                "categories/knowledge/passwd.md"}
        assert refused["categories/knowledge/passwd.md"] == "is a symbolic link"
        assert not (a.root / "categories/knowledge/huge.md").exists()
        assert not (a.root / "categories/knowledge/passwd.md").is_symlink()
        assert (a.root / "index/keyword.sqlite").read_bytes()[:6] == b"SQLite"
        # A file the schema refuses arrives as a hand-made one would: left on disk,
        # reported in stats.
        rejected = {f["path"] for f in (await a.result("stats"))["rejected_files"]["files"]}
        assert "categories/knowledge/bad.md" in rejected
        hits = await a.result("memory_search", query="written elsewhere")
        assert [m["content"] for m in hits["memories"]] == ["A note written elsewhere"]
        assert "root:" not in str(await a.result("memory_search", query="root"))
        # fine.md was completed (front matter, an id) as a hand-made note is; the
        # history commits that like any change.
        await a.engine.git.commit()
        assert git(a.root, "status", "--porcelain") == ""
    finally:
        a.close()


async def test_three_machines_in_random_order_end_the_same(tmp_path) -> None:
    import random

    remote = bare(tmp_path)
    rigs = [await machine(tmp_path, name, remote) for name in "abc"]
    chance = random.Random(47)
    try:
        shared = await rigs[0].result("memory_write", content="shared 0", category="knowledge")
        for rig in rigs:
            await sync(rig)
        written: dict[str, str] = {}
        for step in range(18):
            rig = chance.choice(rigs)
            action = chance.random()
            if action < 0.4:
                m = await rig.result("memory_write", content=f"note {step}",
                                     category="knowledge")
                written[m["id"]] = m["content"]
            elif action < 0.8:
                await rig.result("memory_update", id=shared["id"], content=f"shared {step}")
            else:
                await sync(rig)
        for rig in [*rigs, *rigs]:  # twice round: everything reaches everyone
            await sync(rig)
        exports = []
        for rig in rigs:
            lines = (await rig.result("memory_export", limit=1000))["lines"]
            exports.append(sorted(lines))
            assert markers(rig.root) == []
            for memory_id, content in written.items():
                assert (await rig.result("memory_read", id=memory_id))["content"] == content
        assert exports[0] == exports[1] == exports[2]
        heads = {git(rig.root, "rev-parse", "HEAD") for rig in rigs}
        assert len(heads) == 1
        versions = [{(v["version"], v["content"]) for v in
                     (await rig.result("memory_history", id=shared["id"]))["versions"]}
                    for rig in rigs]
        assert versions[0] == versions[1] == versions[2]
    finally:
        for rig in rigs:
            rig.close()


async def test_a_remote_that_never_answers_is_stopped_at_the_timeout(tmp_path) -> None:
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.append(listener.accept()[0]), daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/memory.git"
    rig = Rig(tmp_path / "a", {"git": {"remote": url, "sync_timeout": "1s"}})
    await rig.start()
    await rig.engine.git.start()
    try:
        result = await rig.result("memory_sync")
        assert "gave no answer in 1 s" in result["error"]
        assert (await rig.result("health"))["status"] == "ok"  # the daemon answers on
    finally:
        rig.close()
        listener.close()
        for conn in held:
            conn.close()


async def test_two_machines_pushing_at_once_both_get_through(tmp_path) -> None:
    import trio

    remote = bare(tmp_path)
    a, b = await machine(tmp_path, "a", remote), await machine(tmp_path, "b", remote)
    try:
        await sync(a)
        await sync(b)
        # A slow remote from now on: the next push to arrive waits 3 s before its ref is
        # updated, so the other machine's push overlaps it (and finds the branch moved).
        slow = tmp_path / "slow-once"
        slow.write_text("")
        hook = remote / "hooks" / "pre-receive"
        hook.write_text(f"#!/bin/sh\ncat > /dev/null\nif rm {slow} 2>/dev/null; then "
                        "sleep 3; fi\n")
        hook.chmod(0o755)
        x = await a.result("memory_write", content="written on a", category="knowledge")
        y = await b.result("memory_write", content="written on b", category="knowledge")
        results = []

        async def one(rig):
            results.append(await sync(rig))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(one, a)
            nursery.start_soon(one, b)
        assert sorted(r["attempts"] for r in results) == [1, 2]
        await sync(a)
        await sync(b)
        for rig in (a, b):
            for m in (x, y):
                assert (await rig.result("memory_read", id=m["id"]))["content"] == m["content"]
    finally:
        a.close()
        b.close()


async def test_episodes_swept_on_one_machine_join_the_others_topic_graph(pair) -> None:
    from datetime import UTC, datetime, timedelta

    from memoryd.jobs import decay_sweep

    a, b = pair
    old = datetime.now(UTC) - timedelta(days=30)
    talk = [("user", "We use Redis for session caching in the API."),
            ("assistant", "Redis keeps sessions fast and expires them with TTLs."),
            ("user", "Redis eviction hit our session cache last night."),
            ("assistant", "Set maxmemory-policy to volatile-lru for the session keys.")]
    for i, (role, text) in enumerate(talk):
        await a.result("memory_remember", session="s1", role=role, content=text,
                       timestamp=(old + timedelta(minutes=i)).isoformat())
    await sync(a)
    await sync(b)
    await decay_sweep.run(a.engine, datetime.now(UTC), dry_run=False)
    swept = (await a.result("stats"))["graph"]
    assert swept["episodes"] == 2
    await sync(a)
    await sync(b)
    got = (await b.result("stats"))["graph"]
    assert (got["episodes"], got["nodes"]) == (swept["episodes"], swept["nodes"])


async def test_a_remote_refusing_the_credentials_is_reported_not_prompted(tmp_path) -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Refusing(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="memory"')
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/memory.git"
    rig = await machine(tmp_path, "a", url)
    try:
        result = await rig.result("memory_sync")  # returns: git was never let prompt
        assert result["error"] and "failed" in result["error"], result["error"]
        assert (await rig.result("stats"))["sync"]["failures"] == 1
    finally:
        rig.close()
        server.shutdown()


async def test_a_merged_memory_keeps_the_wikilinks_obsidian_reads(pair) -> None:
    a, b = pair
    m = await a.result("memory_write", content="Ann", category="people", tags=["x"])
    other = await a.result("memory_write", content="Bea", category="people")
    await a.result("memory_link", source=m["id"], target=other["id"])
    await sync(a)
    await sync(b)
    await a.result("memory_tag", id=m["id"], add=["from-a"])
    await b.result("memory_update", id=m["id"], content="Ann Smith", tags=["x", "from-b"])
    await sync(a)
    merged = await sync(b)
    assert [r["id"] for r in merged["resolved"]] == [m["id"]]
    text = file_of(b.root, m).read_text()
    assert "from-a" in text and "from-b" in text  # the sets merged: the file written anew
    assert f"[[{file_of(b.root, other).stem}]]" in text


async def test_what_a_sync_brings_in_is_announced_to_subscribers(pair) -> None:
    import trio

    from tests.test_scopes import Client

    a, b = pair
    await sync(b)
    listener = Client(b)
    await listener.start()
    await listener.ok("events/subscribe")
    m = await a.result("memory_write", content="Announced on arrival", category="knowledge")
    await sync(a)
    await sync(b)
    with trio.fail_after(5):
        _, event = await listener.conn.subscription.receive.receive()
    assert event["event"] == "written" and event["by"] == "sync"
    assert event["path"] == str(file_of(b.root, m).relative_to(b.root))


async def test_one_name_made_by_hand_on_two_machines(pair) -> None:
    """`ideas.md` written on each machine is one note (its id is its name) edited twice:
    one text wins, the other is its history. Two files that name different ids at one
    path are two memories: both stay."""
    a, b = pair
    ids = {a: "0b6c2f3e-0000-4000-8000-00000000000a", b: "0b6c2f3e-0000-4000-8000-00000000000b"}
    for rig, text in ((a, "Ideas from the laptop"), (b, "Ideas from the desktop")):
        folder = rig.root / "categories" / "knowledge"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "ideas.md").write_text(text + "\n")
        (folder / "plans.md").write_text(f"---\nid: {ids[rig]}\n---\nPlans of {text[11:]}\n")
        await rig.engine.sync.sync_paths(["categories/knowledge/ideas.md",
                                          "categories/knowledge/plans.md"])
    await sync(a)
    merged = await sync(b)
    assert sorted(r["rule"] for r in merged["resolved"]) == [  # both at version 1
        "the same version: the later edit wins", "two memories at one path: both kept"]
    await sync(a)
    for rig in (a, b):
        listed = await rig.result("memory_list", category="knowledge")
        contents = {m["content"] for m in listed["memories"]}
        assert len(contents) == 3, contents  # one ideas note, two plans notes
        assert {"Plans of the laptop", "Plans of the desktop"} <= contents
        history = await rig.result("memory_history", id="ideas")
        assert {v["content"] for v in history["versions"]} == {
            "Ideas from the laptop", "Ideas from the desktop"}
        assert markers(rig.root) == []



async def test_a_merge_index_lock_left_by_a_killed_sync_does_not_fail_the_next(pair) -> None:
    """kill -9 in a sync's read-tree leaves .git/memoryd-merge.index.lock: the next sync
    with something to merge removes it (open in no process, untouched) and merges."""
    a, b = pair
    await a.result("memory_write", content="Written on a first", category="knowledge")
    await sync(a)
    await sync(b)
    await a.result("memory_write", content="Then another on a", category="knowledge")
    mine = await b.result("memory_write", content="And one on b", category="knowledge")
    await sync(a)
    lock = b.root / ".git" / "memoryd-merge.index.lock"
    lock.write_text("")
    old = time.time() - 600
    os.utime(lock, (old, old))
    merged = await sync(b)
    assert merged["came_in"] >= 1 and not lock.exists()
    await sync(a)
    assert (await a.result("memory_read", id=mine["id"]))["content"] == "And one on b"


async def test_an_agent_sees_how_a_sync_went_but_not_which_files(pair) -> None:
    """`stats.sync` names files (paths_in, resolved, conflicts): paths are titles, and a
    private memory's title says what it holds. A named agent gets the counts alone."""
    a, b = pair
    alice = Connection()
    alice.caller = Caller(agent="agent:alice", default_scope="agent:alice")
    private = await a.result("memory_write", alice, title="Divorce lawyer is Ms Quinlan",
                             content="Alice's divorce lawyer is Ms Quinlan", category="people")
    await sync(a)
    await sync(b)
    bob = Connection()
    bob.caller = Caller(agent="agent:bob", default_scope="agent:bob")
    seen = (await b.result("stats", bob))["sync"]
    assert seen["last"]["came_in"] >= 1 and seen["last"]["error"] is None
    assert "quinlan" not in str(seen).lower() and private["id"] not in str(seen)
    assert "paths_in" not in seen["last"] and isinstance(seen["conflicts"], int)
    mine = (await b.result("stats"))["sync"]  # the user's own tooling: which files, too
    assert any("quinlan" in path.lower() for path in mine["last"]["paths_in"])


async def test_a_name_that_is_not_utf8_arriving_by_sync_is_reported(pair) -> None:
    """A file whose name is not UTF-8, committed on another machine, comes in by a sync:
    the sync answers (the name escaped), the file is listed in `rejected_files`, and the
    next sync and stats answer too."""
    a, b = pair
    await a.result("memory_write", content="A note that travels", category="knowledge")
    folder = os.fsencode(a.root / "categories" / "knowledge")
    with open(folder + b"/r\xe9sum\xe9.md", "wb") as out:
        out.write(b"# Resume\n\nmade on a machine whose names are Latin-1\n")
    git(a.root, "add", "-A")
    git(a.root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "latin-1")
    await sync(a)
    got = await sync(b)
    assert got["came_in"] >= 1
    stats = await b.result("stats")
    assert any("not UTF-8" in f["reason"] for f in stats["rejected_files"]["files"])
    assert (await b.result("memory_search", query="travels"))["total"] == 1
    await sync(b)


@pytest.mark.parametrize("made", ["a symbolic link", "a file"])
async def test_a_remote_that_turns_a_folder_into_a_link_or_a_file_is_refused(
        pair, tmp_path, made) -> None:
    """Someone who can push turns categories/people into a link (to /etc) or a file: the
    sync refuses that entry with its reason and goes on, and what this machine wrote
    into the folder meanwhile stays, on disk and read back, over two syncs."""
    a, b = pair
    await a.result("memory_write", content="Ann is a friend", category="people")
    await sync(a)
    await sync(b)
    evil = tmp_path / "evil"
    subprocess.run(["git", "clone", "-q", "-b", "main", str(tmp_path / "remote.git"),
                    str(evil)], check=True)
    git(evil, "rm", "-rq", "categories/people")
    (evil / "categories").mkdir(exist_ok=True)
    if made == "a file":
        (evil / "categories" / "people").write_text("not a folder\n")
    else:
        os.symlink("/etc", evil / "categories" / "people")
    git(evil, "add", "-A")
    git(evil, "-c", "user.name=e", "-c", "user.email=e@e", "commit", "-qm", "evil")
    git(evil, "push", "-q", "origin", "HEAD:main")
    mine = [await b.result("memory_write", content=text, category="people")
            for text in ("Bob is a colleague", "Cid is a neighbour")]
    first = await sync(b)
    assert [r["path"] for r in first["refused"]] == ["categories/people"]
    assert first["refused"][0]["reason"] == (
        "is a symbolic link" if made == "a symbolic link"
        else "is a file where this machine has a folder")
    await sync(b)
    people = b.root / "categories" / "people"
    assert people.is_dir() and not people.is_symlink()
    for memory in mine:
        assert (await b.result("memory_read", id=memory["id"]))["content"] == memory["content"]
        assert (b.root / file_of(b.root, memory["id"])).is_file()
    assert not list((b.root / "categories").glob(".tmp-*"))


@pytest.mark.parametrize("length", [230, 255])
async def test_a_name_as_long_as_the_file_system_allows_arrives_and_is_indexed(
        pair, length) -> None:
    """A remote file (and the same made by hand) whose name is 230-255 bytes, valid in git
    and ext4: memoryd's temp file beside it must fit too. It merges, is indexed (its
    partial front matter completed), and every later sync works."""
    a, b = pair
    name = "n" * (length - 3) + ".md"
    (a.root / "categories" / "knowledge" / name).write_text("# Long\n\nZed keeps bees\n")
    git(a.root, "add", "-A")
    git(a.root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "long")
    await sync(a)
    got = await sync(b)
    assert got["came_in"] >= 1 and got["refused"] == []
    assert (await b.result("memory_search", query="bees"))["total"] == 1
    await b.result("memory_write", content="after the long name", category="knowledge")
    await sync(b)
    await sync(a)
    assert (await a.result("memory_search", query="after the long name"))["total"] == 1
    by_hand = b.root / "categories" / "people" / name
    by_hand.write_text("---\ntitle: by hand\n---\nYara grows figs\n")
    await b.engine.sync.sync_paths([str(by_hand.relative_to(b.root))])
    assert (await b.result("memory_search", query="figs"))["total"] == 1


def test_a_name_longer_than_a_file_system_takes_is_refused_by_name() -> None:
    assert refusal(f"categories/knowledge/{'n' * 252}.md", "100644", 10) is None
    assert "longer than the 255 bytes" in (
        refusal(f"categories/knowledge/{'n' * 253}.md", "100644", 10) or "")
    assert "longer than the 255 bytes" in (
        refusal(f"categories/knowledge/{'é' * 127}.md", "100644", 10) or "")


async def test_settings_never_come_from_a_remote(pair) -> None:
    """Whoever can push commits a config.yaml that turns redaction off and points the LLM
    at their server, and a .gitignore that lets the indexes out: the other machine
    refuses both, keeps its own, and syncs on."""
    a, b = pair
    own = "# this machine's\nllm:\n  url: http://127.0.0.1:8080/v1\n"
    (b.root / "config.yaml").write_text(own)
    ignore = (b.root / ".gitignore").read_text()
    await b.result("memory_write", content="a note on b", category="knowledge")
    await sync(b)
    await sync(a)
    (a.root / "config.yaml").write_text(
        "redaction:\n  disabled: [github, assignment]\nllm:\n  url: http://evil.example/v1\n")
    (a.root / ".gitignore").write_text("# nothing ignored\n")
    git(a.root, "add", "-A")
    git(a.root, "-c", "user.name=e", "-c", "user.email=e@e", "commit", "-qm", "settings")
    await sync(a)
    got = await sync(b)
    refused = {r["path"]: r["reason"] for r in got["refused"]}
    # (the indexes the new .gitignore let in are refused too, as derived)
    assert {p for p, r in refused.items() if "this machine's own settings" in r} == {
        "config.yaml"}  # its .gitignore is passed over without a word, and not taken
    assert (b.root / "config.yaml").read_text() == own
    assert (b.root / ".gitignore").read_text() == ignore
    await b.result("memory_write", content="another note on b", category="knowledge")
    await sync(b)
    await sync(a)
    assert (await a.result("memory_search", query="another note on b"))["total"] == 1


async def test_names_that_differ_only_in_case_are_not_written_side_by_side(pair) -> None:
    """`Meeting.md` beside this machine's `meeting.md` is one file on a disk that ignores
    case: the remote's is refused, ours stays. A file renamed by case there is renamed
    here too, not lost."""
    a, b = pair
    folder = "categories/knowledge"
    (b.root / folder / "meeting.md").write_text("# Meeting\n\nours: Monday 10:00\n")
    (b.root / folder / "Plan.md").write_text("# Plan\n\nthe plan\n")
    await b.engine.sync.reconcile()
    await sync(b)
    await sync(a)
    (a.root / folder / "Meeting.md").write_text("# Meeting\n\ntheirs: Friday\n")
    git(a.root, "mv", f"{folder}/Plan.md", f"{folder}/plan.md")
    git(a.root, "add", "-A")
    git(a.root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "case")
    await sync(a)
    got = await sync(b)
    refused = {r["path"]: r["reason"] for r in got["refused"]}
    assert list(refused) == [f"{folder}/Meeting.md"]
    assert "differs only in case" in refused[f"{folder}/Meeting.md"]
    assert "Monday" in (b.root / folder / "meeting.md").read_text()
    assert sorted(p.name for p in (b.root / folder).glob("*lan.md")) == ["plan.md"]
    assert (await b.result("memory_search", query="the plan"))["total"] == 1


OLD_IGNORE = "# memoryd: derived or live files, not history\n/index/\n/memory.sock\n"


async def test_each_machine_keeps_its_own_settings_and_logs(tmp_path) -> None:
    """Machine a used memoryd before it had a remote, when its history tracked
    config.yaml and logs/; b writes its own. In any order of syncs, with both changing
    their settings and logs between them, no sync needs the user, and each machine's
    files stay its own, on disk and out of the history."""
    remote = bare(tmp_path)
    old = tmp_path / "a"
    (old / "logs").mkdir(parents=True)
    (old / ".gitignore").write_text(OLD_IGNORE)
    (old / "config.yaml").write_text("# a's settings\nredaction:\n  enabled: true\n")
    (old / "logs" / "hooks.log").write_text("a: session start\n")
    git(old, "init", "-q")
    git(old, "add", "-A")
    git(old, "-c", "user.name=a", "-c", "user.email=a@a", "commit", "-qm", "an older root")
    a = await machine(tmp_path, "a", remote)
    b_root = tmp_path / "b"
    (b_root / "logs").mkdir(parents=True)
    (b_root / "config.yaml").write_text("# b's settings\nllm:\n  url: http://127.0.0.1:1/v1\n")
    (b_root / "logs" / "hooks.log").write_text("b: session start\n")
    b = await machine(tmp_path, "b", remote)
    try:
        # The older root's copies left its history; the files are where they were.
        assert git(a.root, "ls-files", "config.yaml", "logs") == ""
        assert (a.root / "config.yaml").read_text().startswith("# a's settings")
        assert (a.root / "logs" / "hooks.log").read_text() == "a: session start\n"
        assert "/config.yaml" in (a.root / ".gitignore").read_text()
        written = []
        for n, order in enumerate([(a, b), (b, a), (a, b), (b, a)]):
            for rig, name in ((a, "a"), (b, "b")):
                with (rig.root / "config.yaml").open("a") as f:
                    f.write(f"# {name} changed it, round {n}\n")
                with (rig.root / "logs" / "hooks.log").open("a") as f:
                    f.write(f"{name}: prompt {n}\n")
                rig.engine.git.changed(["config.yaml", "logs/hooks.log"])
                written.append(await rig.result(
                    "memory_write", content=f"{name} learned thing {n}", category="knowledge"))
            for rig in order:
                result = await sync(rig)
                assert result["needs_you"] == [] and result["refused"] == [], result
        await sync(b)  # a's last round
        for rig, name in ((a, "a"), (b, "b")):
            settings = (rig.root / "config.yaml").read_text()
            assert settings.startswith(f"# {name}'s settings")
            assert settings.count(f"# {name} changed it") == 4 and "other" not in settings
            assert all(line.startswith(f"{name}:") for line in
                       (rig.root / "logs" / "hooks.log").read_text().splitlines())
            assert git(rig.root, "ls-files", "config.yaml", "logs") == ""
            for memory in written:
                assert (await rig.result("memory_read", id=memory["id"]))["content"] == \
                    memory["content"]
        assert "config.yaml" not in git(remote, "ls-tree", "-r", "--name-only", "HEAD")
        assert "logs/" not in git(remote, "ls-tree", "-r", "--name-only", "HEAD")
    finally:
        a.close()
        b.close()


async def test_a_dry_run_right_after_a_write_counts_what_the_sync_then_does(pair) -> None:
    """The writes the background commit has not made yet are in what a dry run would
    send; it reports what the sync then resolves, and changes nothing."""
    a, b = pair
    m = await a.result("memory_write", content="The router is in the hall",
                       category="knowledge")
    await sync(a)
    await sync(b)
    await a.result("memory_update", id=m["id"], content="The router is in the study")
    await a.result("memory_write", content="The printer needs toner", category="knowledge")
    await sync(a)
    await b.result("memory_update", id=m["id"], content="The router is in the attic")
    await b.result("memory_write", content="The fuse box is in the garage",
                   category="knowledge")
    head = git(b.root, "rev-parse", "HEAD")
    planned = await b.result("memory_sync", dry_run=True)
    assert planned["error"] is None and planned["dry_run"] is True
    assert git(b.root, "rev-parse", "HEAD") != head  # b's writes are committed
    assert git(b.root, "status", "--porcelain") == ""
    assert (await b.result("memory_read", id=m["id"]))["content"] == \
        "The router is in the attic"  # no file changed
    assert (await b.result("memory_search", query="printer toner"))["total"] == 0
    done = await sync(b)
    assert planned["went_out"] == done["went_out"] >= 1
    assert planned["came_in"] == done["came_in"] >= 1
    assert [(r["id"], r["rule"]) for r in planned["resolved"]] == \
        [(r["id"], r["rule"]) for r in done["resolved"]] == [
            (m["id"], "the same version: the later edit wins")]


async def test_a_report_names_the_rule_that_chose_and_reads_are_not_conflicts(pair) -> None:
    """Two edits of one version are decided by the later edit, and say so; reads
    counted on each machine (access counts flushed into the files) resolve nothing
    and report nothing; a memory resolved on one machine is not reported again on
    the one that pulls it."""
    a, b = pair
    m = await a.result("memory_write", content="The cat is fed at six", category="knowledge")
    quiet = [await a.result("memory_write", content=f"Shelf {n} holds the atlases",
                            category="knowledge") for n in range(5)]
    await sync(a)
    await sync(b)
    await a.result("memory_update", id=m["id"], content="The cat is fed at seven")
    await b.result("memory_update", id=m["id"], content="The cat is fed at eight")
    for rig in (a, b):  # both read the shelves: their counts reach the files
        for memory in quiet:
            await rig.result("memory_read", id=memory["id"])
        assert await rig.engine.flush_stats() >= len(quiet)
    await sync(a)
    merged = await sync(b)
    assert [(r["id"], r["rule"]) for r in merged["resolved"]] == [
        (m["id"], "the same version: the later edit wins")]
    for memory in quiet:  # the reads of both machines, in one file
        read = await b.result("memory_read", id=memory["id"])
        assert read["content"] == memory["content"] and read["version"] == 1
    # a pulls b's resolution, after counting more reads of the cat's memory itself.
    await a.result("memory_read", id=m["id"])
    await a.engine.flush_stats()
    pulled = await sync(a)
    assert pulled["resolved"] == [] and pulled["needs_you"] == []
    assert (await a.result("memory_read", id=m["id"]))["content"] == \
        (await b.result("memory_read", id=m["id"]))["content"] == "The cat is fed at eight"


@pytest.mark.parametrize(("made_with", "expected"), [
    (("-c", "init.defaultBranch=master"), "master"),  # the docs' plain `git init --bare`
    (("-c", "init.defaultBranch=trunk"), "trunk"),
])
async def test_the_branch_is_the_one_the_remotes_head_names(tmp_path, made_with,
                                                            expected) -> None:
    """With no `git.branch` set, memoryd pushes the branch the remote's HEAD names, so
    `git log` on the remote shows what was synced; the result and status say which."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", *made_with, "init", "-q", "--bare", str(remote)], check=True)
    a, b = await machine(tmp_path, "a", remote), await machine(tmp_path, "b", remote)
    try:
        m = await a.result("memory_write", content="The boiler is serviced in May",
                           category="knowledge")
        sent = await sync(a)
        assert sent["branch"] == expected
        assert "The boiler is serviced in May" in git(remote, "log", "-p")  # HEAD's log
        assert (await a.result("stats"))["sync"]["branch"] == expected
        got = await sync(b)
        assert got["branch"] == expected and got["came_in"] >= 1
        assert (await b.result("memory_read", id=m["id"]))["content"] == m["content"]
    finally:
        a.close()
        b.close()


async def test_a_remote_memoryd_filled_before_keeps_its_branch(tmp_path) -> None:
    """A remote whose HEAD names `master` while an earlier memoryd pushed `main` there:
    the sync stays on `main`, the history the machines share. A branch set in the
    settings is used as it is."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "-c", "init.defaultBranch=master", "init", "-q", "--bare",
                    str(remote)], check=True)
    old = await machine(tmp_path, "old", remote)
    named = Rig(tmp_path / "named", {"git": {"remote": str(remote), "branch": "main"}})
    await named.start()
    assert named.engine.git is not None
    await named.engine.git.start()
    try:
        await named.result("memory_write", content="Pushed to main", category="knowledge")
        assert (await sync(named))["branch"] == "main"
        got = await sync(old)
        assert got["branch"] == "main" and got["came_in"] >= 1
        assert "master" not in git(remote, "branch", "--list")
    finally:
        old.close()
        named.close()
