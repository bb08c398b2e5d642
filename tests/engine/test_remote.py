"""Sync through a git remote, engine to engine: two (or three) real roots, each with
its real git history, and one bare repository as the remote, all on this machine.
What came in is indexed; two machines' edits of one memory become one by the rules
(the higher version wins, the other is kept as a version, an edit beats a delete);
no file ever holds a conflict marker; a file git cannot merge is reported."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memoryd.history.git import available
from tests.layout import file_of
from tests.rig import Rig

pytestmark = pytest.mark.skipif(not available(), reason="no git binary on this machine")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                          check=True).stdout


def bare(tmp_path: Path) -> Path:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
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
    # Changes git can merge are merged.
    (a.root / "notes.txt").write_text("zero\none\nTWO from a\nthree\n")
    a.engine.git.changed(["notes.txt"])
    (b.root / "notes.txt").write_text("one\nTWO from b\nthree\nfour\n")
    b.engine.git.changed(["notes.txt"])
    await sync(b)
    await sync(a)
    assert (a.root / "notes.txt").read_text() == "zero\none\nTWO from b\nthree\nfour\n"


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
