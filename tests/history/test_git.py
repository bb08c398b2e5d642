"""GitHistory against a real git: a commit stages the files the changes named (minus
what the user's ignore rules exclude), everything at the first commit and every
FULL_EVERY seconds, and everything again when staging by name fails. Commits are
spaced by the interval, or by SPACING times the last commit's length."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time

import pytest
import trio
from structlog.testing import capture_logs

from memoryd.history.git import FULL_EVERY, SPACED_MAX, SPACING, GitHistory, available

pytestmark = pytest.mark.skipif(not available(), reason="no git binary on this machine")


def tree(root) -> set[str]:
    out = subprocess.run(["git", "ls-tree", "-r", "--name-only", "HEAD"], cwd=root,
                         capture_output=True, text=True, check=True).stdout
    return set(out.split())


def put(root, path: str, text: str = "x\n") -> str:
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(text)
    return path


async def started(root) -> GitHistory:
    put(root, "categories/knowledge/first.md")
    history = GitHistory(root, 0.01)
    await history.start()
    assert history.enabled, history.last_error
    return history


async def test_a_commit_stages_the_named_files_and_everything_when_due(tmp_path,
                                                                        mock_clock) -> None:
    history = await started(tmp_path)
    assert tree(tmp_path) == {".gitignore", "categories/knowledge/first.md"}

    put(tmp_path, "categories/knowledge/second.md")
    put(tmp_path, "stray.txt")  # no change named it
    history.changed(["categories/knowledge/second.md"])
    assert await history.commit() is not None
    assert "categories/knowledge/second.md" in tree(tmp_path)
    assert "stray.txt" not in tree(tmp_path)
    assert await history.commit() is None  # nothing named, nothing due

    mock_clock.jump(FULL_EVERY)
    assert await history.commit() is not None
    assert "stray.txt" in tree(tmp_path)
    log = subprocess.run(["git", "log", "--format=%s"], cwd=tmp_path, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert log == ["memoryd: 1 added", "memoryd: 1 added", "memoryd: 2 added"]


async def test_a_first_commit_that_fails_is_tried_again_not_the_history_off(tmp_path) -> None:
    """A user's git (an editor's `git status`) holding index.lock as the daemon starts:
    the start's commit fails, and the history stays on and commits once it is free."""
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    history = GitHistory(tmp_path, 0.01)
    lock = tmp_path / ".git" / "index.lock"  # taken after the start: a live git's
    lock.write_text("")
    put(tmp_path, "categories/knowledge/first.md")
    await history.start()
    assert history.enabled and "index.lock" in (history.last_error or "")
    assert history.dirty.is_set() and history.commits == 0
    lock.unlink()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(history.run_forever)
        with trio.fail_after(30):
            while history.commits == 0:
                await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    assert tree(tmp_path) == {".gitignore", "categories/knowledge/first.md"}


async def test_deleted_and_moved_files_leave_the_tree(tmp_path) -> None:
    history = await started(tmp_path)
    (tmp_path / "categories/knowledge/first.md").rename(tmp_path / "trash-first.md")
    history.changed(["categories/knowledge/first.md", "trash-first.md"])
    await history.commit()
    assert tree(tmp_path) == {".gitignore", "trash-first.md"}
    (tmp_path / "trash-first.md").unlink()
    history.changed(["trash-first.md", "never-existed.md"])
    await history.commit()
    assert tree(tmp_path) == {".gitignore"}


async def test_the_users_ignore_rules_hold_for_named_files(tmp_path) -> None:
    history = await started(tmp_path)
    with (tmp_path / ".gitignore").open("a") as ignore:
        ignore.write("sessions/\n")
    history.changed([".gitignore", put(tmp_path, "sessions/s1/turn.md"),
                     put(tmp_path, "categories/knowledge/kept.md")])
    await history.commit()
    assert "categories/knowledge/kept.md" in tree(tmp_path)
    assert not any(p.startswith("sessions/") for p in tree(tmp_path))
    status = subprocess.run(["git", "status", "--porcelain"], cwd=tmp_path,
                            capture_output=True, text=True, check=True).stdout
    assert status == ""


async def test_staging_by_name_that_fails_stages_everything(tmp_path) -> None:
    history = await started(tmp_path)
    put(tmp_path, "categories/knowledge/inside.md")
    history.changed(["categories/knowledge"])  # a folder: update-index refuses it
    assert await history.commit() is not None
    assert "categories/knowledge/inside.md" in tree(tmp_path)


async def test_a_commit_keeps_the_users_commits_and_their_branch(tmp_path) -> None:
    history = await started(tmp_path)
    subprocess.run(["git", "checkout", "-q", "-b", "mine"], cwd=tmp_path, check=True)
    put(tmp_path, "NOTES.txt")
    subprocess.run(["git", "add", "NOTES.txt"], cwd=tmp_path, check=True)
    subprocess.run(["git", "-c", "user.name=Ada", "-c", "user.email=ada@example.org",
                    "commit", "-qm", "my own commit"], cwd=tmp_path, check=True)
    history.changed([put(tmp_path, "categories/knowledge/later.md")])
    head = await history.commit()
    branch = subprocess.run(["git", "rev-parse", "mine"], cwd=tmp_path, capture_output=True,
                            text=True, check=True).stdout.strip()
    assert head == branch
    assert {"NOTES.txt", "categories/knowledge/later.md"} <= tree(tmp_path)
    reflog = subprocess.run(["git", "reflog", "-1", "--format=%gs"], cwd=tmp_path,
                            capture_output=True, text=True, check=True).stdout.strip()
    assert reflog == "commit: memoryd: 1 added"


async def test_commits_are_spaced_by_how_long_the_last_one_took(tmp_path,
                                                                autojump_clock) -> None:
    history = GitHistory(tmp_path, 10.0)
    started: list[float] = []
    lengths = [2.0, 10.0, 0.1, 0.1]  # slow commits (a big store's), then quick ones

    async def commit() -> str:
        started.append(trio.current_time())
        autojump_clock.jump(lengths[len(started) - 1])
        history.changed(["categories/knowledge/more.md"])  # writes keep coming
        return "commit"

    history.commit = commit  # type: ignore[method-assign]
    history.changed(["categories/knowledge/first.md"])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(history.run_forever)
        while len(started) < 4:
            await trio.sleep(1)
        nursery.cancel_scope.cancel()
    gaps = [b - a for a, b in itertools.pairwise(started)]
    assert SPACING * 10.0 > SPACED_MAX > SPACING * 2.0
    assert gaps == pytest.approx([2.0 + SPACING * 2.0, 10.0 + SPACED_MAX, 0.1 + 10.0])


@pytest.mark.parametrize("name", ["index.lock", "packed-refs.lock",
                                  "refs/memoryd/remote.lock", "memoryd-merge.index.lock",
                                  "config.lock", "logs/refs/heads/main.lock"])
async def test_a_lock_left_by_a_git_killed_before_this_start_is_removed(tmp_path,
                                                                         name) -> None:
    """kill -9 during a commit (or a sync's fetch, or the `gc --auto` after a commit)
    leaves a lock: every later commit would fail. A lock older than this history's start
    that no process holds is removed."""
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    lock = tmp_path / ".git" / name
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("")
    old = time.time() - 600
    os.utime(lock, (old, old))
    history = GitHistory(tmp_path, 0.01)
    put(tmp_path, "categories/knowledge/first.md")
    with capture_logs() as logs:
        await history.start()
    assert not lock.exists() and history.commits == 1 and history.failures == 0
    assert "git.stale_lock_removed" in [e["event"] for e in logs]
    assert history.describe()["enabled"] and history.describe()["last_commit_at"]


async def test_a_lock_left_a_moment_before_this_start_is_removed(tmp_path) -> None:
    """A service restarted right after the kill (systemd waits 100 ms) finds a lock
    seconds old: held by no process, it is stale too. One touched this instant (a live
    git between closing its lock and renaming it) is left for the next try."""
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    lock = tmp_path / ".git" / "index.lock"
    lock.write_text("")
    put(tmp_path, "categories/knowledge/first.md")
    first = GitHistory(tmp_path, 0.01)
    await first.start()
    assert lock.exists() and first.commits == 0  # just made: left alone
    moment = time.time() - 3  # the kill, 3 s before this (re)start
    os.utime(lock, (moment, moment))
    restarted = GitHistory(tmp_path, 0.01)
    await restarted.start()
    assert not lock.exists() and restarted.commits == 1


async def test_a_live_gits_lock_is_left_alone_and_the_failures_are_told(tmp_path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    lock = tmp_path / ".git" / "index.lock"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; "
                               f"f = open({str(lock)!r}, 'w'); print('held', flush=True); "
                               "time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        old = time.time() - 600
        os.utime(lock, (old, old))  # old, but held open: a user's long-running git
        history = GitHistory(tmp_path, 0.01)
        put(tmp_path, "categories/knowledge/first.md")
        await history.start()
        assert lock.exists() and history.commits == 0
        assert history.describe()["failures"] == 1 and "index.lock" in (
            history.describe()["last_error"] or "")
    finally:
        holder.kill()
        holder.wait()
