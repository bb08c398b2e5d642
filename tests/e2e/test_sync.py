"""Sync between daemon processes through one bare repository on this machine, driven
by memoryctl as a user would: writes on each, syncs in random order, the same memory
edited on two machines, a delete against an edit; then kill -9 of a daemon at random
moments of its sync, and a restart that leaves a clean root and completes the sync."""

from __future__ import annotations

import contextlib
import json
import random
import subprocess
import threading
import time
from pathlib import Path

import pytest

from memoryd.history.git import available
from memoryd_client import DaemonUnavailable, RpcFailure
from tests.e2e.test_lifecycle import wait_for
from tests.e2e.test_memoryctl import ctl, ok
from tests.engine.test_remote import markers

pytestmark = pytest.mark.skipif(not available(), reason="no git binary on this machine")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                          check=True).stdout


def config(remote: Path) -> str:
    # Syncs only when told: the test decides the order.
    return f"git:\n  remote: {remote}\n  commit_interval: 1s\njobs:\n  enabled: false\n"


def bare(folder: Path) -> Path:
    """The remote as docs/sync.md makes it: `git init --bare`, whose HEAD names
    `init.defaultBranch` (`master` where that is unset)."""
    remote = folder / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    return remote


def head_branch(remote: Path) -> str:
    """The branch the remote's HEAD names: the one memoryd syncs when none is set."""
    return git(remote, "symbolic-ref", "--short", "HEAD").strip()


def synced(daemon) -> dict:
    result = ok(daemon, "sync")
    assert result["error"] is None, result
    return result


def clean(root: Path) -> bool:
    try:
        return git(root, "status", "--porcelain") == ""
    except subprocess.CalledProcessError:  # not a repository yet
        return False


def test_three_daemons_one_remote(make_daemon, short_tmp) -> None:
    remote = bare(short_tmp)
    machines = [make_daemon(name, config=config(remote)).start() for name in "abc"]
    a, b, c = machines
    chance = random.Random(46)
    shared = ok(a, "write", "The team meets on Mondays", "--category", "knowledge")
    gone = ok(a, "write", "The old VPN is at vpn1", "--category", "knowledge")
    for d in machines:
        synced(d)
    written = {}
    for step in range(9):
        d = chance.choice(machines)
        m = ok(d, "write", f"Note {step} from {d.root.name}", "--category", "knowledge")
        written[m["id"]] = m["content"]
        if chance.random() < 0.5:
            synced(chance.choice(machines))
    # The same memory on two machines; a delete against an edit.
    ok(a, "update", shared["id"], "--content", "The team meets on Tuesdays")
    ok(b, "update", shared["id"], "--content", "The team meets on Wednesdays")
    ok(b, "update", shared["id"], "--content", "The team meets on Thursdays")
    ok(c, "delete", gone["id"])
    ok(a, "update", gone["id"], "--content", "The new VPN is at vpn2")
    assert ok(c, "sync", "--dry-run")["dry_run"] is True
    for d in [*machines, *machines]:
        synced(d)
    exports = []
    for d in machines:
        assert markers(d.root) == []
        for memory_id, content in written.items():
            assert ok(d, "read", memory_id)["content"] == content
        assert ok(d, "read", shared["id"])["content"] == "The team meets on Thursdays"
        assert ok(d, "read", gone["id"])["content"] == "The new VPN is at vpn2"
        versions = {v["content"] for v in ok(d, "history", shared["id"])["versions"]}
        assert {"The team meets on Mondays", "The team meets on Tuesdays",
                "The team meets on Wednesdays", "The team meets on Thursdays"} <= versions
        lines = d.call("memory_export", {"limit": 1000})["lines"]
        exports.append(sorted((json.loads(line)["id"], json.loads(line)["content_hash"],
                               json.loads(line)["version"]) for line in lines))
        status = ok(d, "status")["sync"]
        assert status["last"]["error"] is None and status["remote"] == str(remote)
    # Same ids, contents and versions (HEADs differ: each read above counted an
    # access, which this machine's history commits and its next sync sends).
    assert exports[0] == exports[1] == exports[2]
    # The job runs a sync too (`memoryctl run sync`): nothing left to do.
    report = ok(a, "run", "sync")
    assert report["error"] is None and report["changes"] == []
    # What a person reads: the sync's line, and status's remote, last and next syncs.
    said = ctl(a, "sync").stdout
    branch = head_branch(remote)
    assert said.startswith(f"{remote} ({branch}): brought in 0 files, sent 0 commits"), said
    shown = ctl(a, "status").stdout
    assert f"{remote} ({branch})" in shown and "  last" in shown, shown
    assert "The team meets on Thursdays" in git(remote, "log", "-p")  # git log there works



def test_a_sync_that_cannot_reach_its_remote_fails(make_daemon, short_tmp) -> None:
    """memoryctl says why and exits non-zero, as for any error, dry or not, in a table or
    as JSON; the daemon keeps the failure for status."""
    daemon = make_daemon("lone", config=config(short_tmp / "nowhere.git")).start()
    ok(daemon, "write", "A note to send", "--category", "knowledge")
    for args in (("sync",), ("sync", "--dry-run"), ("--json", "sync")):
        said = ctl(daemon, *args)
        assert said.returncode == 1, (args, said.stdout, said.stderr)
        assert "nowhere.git" in said.stdout, said.stdout
    assert "FAILED" in ctl(daemon, "sync").stdout
    assert ok(daemon, "status")["sync"]["last"]["error"]


ROUNDS = 3
JOURNAL = ".git/memoryd-sync.json"


def sync_in_background(daemon) -> None:
    """A sync the test kills the daemon during: its connection ends with the daemon."""
    with contextlib.suppress(DaemonUnavailable, RpcFailure, OSError):
        daemon.call("memory_sync")


def test_kill_9_during_a_sync_then_restart(make_daemon, short_tmp) -> None:
    """Each round: the sender writes and pushes a batch; the receiver's sync is killed
    a random moment after it began (fetching, merging, writing, indexing, pushing);
    the restarted receiver's root is a clean work tree without conflict markers or a
    journal, and its next sync brings in everything."""
    remote = bare(short_tmp)
    sender = make_daemon("sender", config=config(remote)).start()
    receiver = make_daemon("receiver", config=config(remote)).start()
    chance = random.Random(4747)
    sent: dict[str, str] = {}
    killed_at = []
    for round_ in range(ROUNDS):
        with sender.client() as c:
            for n in range(60):
                m = c.call("memory_write", {"content": f"Round {round_} fact {n} about "
                                            f"harbour {n * 7}", "category": "knowledge"})
                sent[m["id"]] = m["content"]
        receiver.call("memory_write", {"content": f"Receiver's own note {round_}",
                                       "category": "knowledge"})
        synced(sender)
        worker = threading.Thread(target=sync_in_background, args=(receiver,))
        worker.start()
        delay = chance.uniform(0.0, 0.5)
        killed_at.append(round(delay, 2))
        time.sleep(delay)
        receiver.kill()
        worker.join(30)
        receiver.start()
        # The start finishes a merge the kill cut short (its journal), then commits.
        wait_for(lambda: not (receiver.root / JOURNAL).exists() and clean(receiver.root),
                 timeout=120, what="a clean work tree and no journal")
        assert markers(receiver.root) == []
        synced(receiver)
        with receiver.client() as c:
            for memory_id, content in sent.items():
                assert c.call("memory_read", {"id": memory_id})["content"] == content
            assert c.call("memory_search", {"query": f"Round {round_} fact 7"})["total"] >= 1
    synced(sender)
    with sender.client() as c:  # what the receiver wrote reached the sender
        for r in range(ROUNDS):
            found = c.call("memory_search", {"query": f"Receiver's own note {r}"})
            assert f"Receiver's own note {r}" in {m["content"] for m in found["memories"]}
    log = receiver.log
    print(f"kill -9 at (s after the sync began): {killed_at}; merges finished after a "
          f"kill: {log.count('sync.recovered')}; syncs done: {log.count('sync.done')}")


def test_writes_are_synced_soon_after_they_are_committed(make_daemon, short_tmp) -> None:
    """No `memoryctl sync`: the history commits the write, and `git.sync_after` later
    the daemon syncs by itself (the job's own schedule is an hour away)."""
    remote = bare(short_tmp)
    d = make_daemon("a", config=f"git:\n  remote: {remote}\n  commit_interval: 1s\n"
                               "  sync_after: 1s\njobs:\n  sync: 1h\n").start()
    d.call("memory_write", {"content": "Pushed without being asked", "category": "knowledge"})

    def on_the_remote() -> bool:
        try:
            listed = git(remote, "grep", "-l", "Pushed without being asked", "HEAD", "--",
                         "categories")
        except subprocess.CalledProcessError:  # no branch yet, or no match
            return False
        return bool(listed.strip())

    wait_for(on_the_remote, timeout=150, what="the write on the remote")
    # The push lands before the sync has finished and recorded itself (it checks the
    # remote's branch after it; git runs at a lower priority on a busy machine).
    wait_for(lambda: d.call("stats")["sync"]["last"] is not None, timeout=60,
             what="the sync's record")
    status = d.call("stats")["sync"]
    assert status["last"]["error"] is None and status["last"]["went_out"] >= 1
