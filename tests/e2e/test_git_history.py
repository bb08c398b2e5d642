"""Git history against a real daemon and a real git: commits in the background in
batches, history with diffs, restore, the user's own commits left alone."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from memoryd.history.git import SPACED_MAX, GitHistory, available
from tests.e2e.test_lifecycle import wait_for
from tests.e2e.test_memoryctl import ctl, ok

pytestmark = pytest.mark.skipif(not available(), reason="no git binary on this machine")


# Commits are spaced 20 times as long as the last one took, up to SPACED_MAX (60 s), so
# that git costs a bounded share of a loaded machine: a wait for a commit allows for it.
SLOW = SPACED_MAX + 60


def git(root, *args: str) -> str:
    """Run git in the root; the daemon may hold index.lock for a moment (a commit), as
    it would for a user's own git: try again, as a user would."""
    for _ in range(100):
        proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        if proc.returncode == 0:
            return proc.stdout
        if "index.lock" not in proc.stderr:
            break
        time.sleep(0.1)
    raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")


def commits(root) -> int:
    return int(git(root, "rev-list", "--count", "HEAD").strip())


def test_batched_commits_history_and_restore(make_daemon) -> None:
    d = make_daemon(config="git:\n  commit_interval: 1s\n").start()
    root = d.root
    status: list[str] = []

    def committed() -> bool:
        """The start's commit is made (the daemon makes the repository after ready)."""
        try:
            status.append(git(root, "status", "--porcelain"))
        except AssertionError as exc:  # not a repository yet
            status.append(str(exc))
            return False
        return status[-1] == ""

    try:  # the index, socket, lock ignored
        wait_for(committed, timeout=SLOW, what="the start's commit")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; git status says {status[-1]!r}") from None
    assert (root / ".git").is_dir() and "/index/" in (root / ".gitignore").read_text()
    start = commits(root)

    # 1000 pipelined writes: at most one commit a second (the interval), not 1000.
    began = time.monotonic()
    with d.client() as c:
        for first in range(0, 1000, 100):  # a window of 100 in flight
            c.send_line(b"\n".join(json.dumps({
                "jsonrpc": "2.0", "id": n, "method": "memory_write",
                "params": {"content": f"note number {n}"}}).encode()
                for n in range(first, first + 100)))
            for _ in range(100):
                c.read_message()
    wait_for(lambda: git(root, "status", "--porcelain") == "", timeout=SLOW,
             what="the writes to be committed")
    made = commits(root) - start
    seconds = time.monotonic() - began  # long on a loaded machine: more commits, rightly
    assert 1 <= made <= 1 + seconds, (made, seconds)
    assert "1000 added" in git(root, "log", "--format=%s") or made > 1

    # A user's own commit is left alone.
    (root / "NOTES.txt").write_text("mine\n")
    git(root, "add", "NOTES.txt")
    git(root, "-c", "user.name=Ada", "-c", "user.email=ada@example.org", "commit", "-qm",
        "my own commit")
    mine = git(root, "rev-parse", "HEAD").strip()

    note = ok(d, "write", "The meeting is on Monday.", "--category", "knowledge")
    wait_for(lambda: git(root, "status", "--porcelain") == "", timeout=SLOW, what="a commit")
    ok(d, "update", note["id"], "--content", "The meeting moved to Tuesday.")
    wait_for(lambda: git(root, "status", "--porcelain") == "", timeout=SLOW, what="a commit")
    assert mine in git(root, "rev-list", "HEAD")  # still in the history

    history = ok(d, "history", note["id"])
    # Each version with its own commit and diff, at its own time.
    first, second = history["versions"]
    assert [r["version"] for r in first["revisions"]] == [1]
    assert [r["version"] for r in second["revisions"]] == [2]
    assert "+The meeting is on Monday." in first["revisions"][0]["diff"]
    assert "-The meeting is on Monday." in second["revisions"][0]["diff"]
    assert "+The meeting moved to Tuesday." in second["revisions"][0]["diff"]
    assert first["updated_at"] < second["updated_at"]
    shown = ctl(d, "history", note["id"]).stdout
    assert "commit " in shown and shown.count("+The meeting moved to Tuesday.") == 1
    assert f"{first['updated_at'][:19]}  ADD" in shown
    assert f"{second['updated_at'][:19]}  UPDATE" in shown

    restored = ok(d, "restore", note["id"], "1")
    assert restored["content"] == "The meeting is on Monday."
    assert restored["version"] == 3 and restored["restored_from"] == 1
    missing = ctl(d, "restore", note["id"], "9")
    assert missing.returncode == 1 and "not in the history" in missing.stderr

    # A delete is committed as the file's move into trash/ (only the files a change
    # names are staged: the move's both ends). The versions the updates kept stay.
    wait_for(lambda: git(root, "status", "--porcelain") == "", timeout=SLOW, what="a commit")
    # the live file has its readable name, the kept versions their id's
    mine = f"*{note['id'][:8]}*"
    before = set(git(root, "ls-files", mine).split())
    live = {p for p in before if p.startswith("categories/")}
    assert len(live) == 1 and len(before - live) == 2  # versions 1 and 2, kept
    deleted = ok(d, "delete", note["id"])
    wait_for(lambda: git(root, "status", "--porcelain") == "", timeout=SLOW, what="a commit")
    assert set(git(root, "ls-files", mine).split()) == (before - live) | {deleted["trash"]}


async def test_a_broken_git_only_turns_the_history_off(tmp_path) -> None:
    (tmp_path / ".git").write_text("not a repository\n")
    history = GitHistory(tmp_path, 0.01)
    await history.start()
    assert history.enabled is False and history.last_error
    assert await history.revisions("x") == []


async def test_history_before_the_first_commit_is_empty_not_an_error(tmp_path) -> None:
    """A new root's repository has no commit until the start's first one: `git log`
    fails there, and memory_history must still answer (from the versions kept)."""
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    history = GitHistory(tmp_path, 60)
    history.enabled = True
    assert await history.revisions("00000000-0000-4000-8000-000000000001") == []
    assert await history.text_at("00000000-0000-4000-8000-000000000001", 1) is None


@pytest.mark.parametrize("git_enabled", [True, False])
def test_every_version_is_kept_whatever_git_does(make_daemon, git_enabled: bool) -> None:
    """Two updates within a second (inside one commit interval, or no git at all): the
    history still holds all three texts, oldest first, and version 1 comes back; a hand
    edit the watcher sees keeps the text it replaced too."""
    d = make_daemon(config=f"git:\n  enabled: {str(git_enabled).lower()}\n"
                           "  commit_interval: 10s\n").start()
    m = d.call("memory_write", {"content": "The user lives in Paris", "category": "people"})
    d.call("memory_update", {"id": m["id"], "content": "The user lives in Lyon"})
    d.call("memory_update", {"id": m["id"], "content": "The user lives in Berlin"})
    history = d.call("memory_history", {"id": m["id"]})
    assert history["git"] is git_enabled
    assert [(v["version"], v["content"], v["current"]) for v in history["versions"]] == [
        (1, "The user lives in Paris", False), (2, "The user lives in Lyon", False),
        (3, "The user lives in Berlin", True)]
    assert [v["event"] for v in history["versions"]] == ["ADD", "UPDATE", "UPDATE"]
    restored = d.call("memory_restore", {"id": m["id"], "version": 1})
    assert restored["content"] == "The user lives in Paris" and restored["version"] == 4
    assert restored["restored_from"] == 1
    contents = [v["content"] for v in d.call("memory_history", {"id": m["id"]})["versions"]]
    assert contents == ["The user lives in Paris", "The user lives in Lyon",
                        "The user lives in Berlin", "The user lives in Paris"]
    # the kept versions are history, not deletes: the trash does not list them
    assert d.call("memory_trash", {})["total"] == 0
    assert d.call("memory_search", {"query": "Lyon"})["total"] == 0
    # a hand edit
    path = d.root / d.call("memory_history", {"id": m["id"]})["versions"][-1]["path"]
    edited = path.with_name(".edit.tmp")  # an editor's save: whole, never half-written
    edited.write_text(path.read_text().replace("lives in Paris", "lives in Rome"))
    edited.replace(path)
    wait_for(lambda: d.call("memory_read", {"id": m["id"]})["content"]
             == "The user lives in Rome", 30, "the hand edit indexed")
    versions = d.call("memory_history", {"id": m["id"]})["versions"]
    assert [v["content"] for v in versions][-2:] == ["The user lives in Paris",
                                                     "The user lives in Rome"]
    assert versions[-1]["version"] == 5 and versions[-1]["current"]
    # deleted and restored from the trash: the latest version, not a kept one
    d.call("memory_delete", {"id": m["id"]})
    assert d.call("memory_trash", {})["total"] == 1
    assert d.call("memory_restore", {"id": m["id"]})["content"] == "The user lives in Rome"
