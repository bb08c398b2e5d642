"""memoryctl purge against a real daemon with git history and a sync remote: a token
of a form no rule knows, in a note, its kept version, a remembered turn, a file name, a
deleted note in the trash, and pushed to the remote; afterwards no file, index, git
object or name under the root holds it, the sync refuses the old history until the
printed force push has run, and then syncs again."""

from __future__ import annotations

import json
import shlex
import subprocess

import pytest

from memoryd.history.git import available
from memoryd_client import RpcFailure
from tests.e2e.test_lifecycle import wait_for
from tests.e2e.test_memoryctl import ctl, ok
from tests.e2e.test_secrets import SLOW, _everything
from tests.e2e.test_sync import bare, clean, config, git, synced

pytestmark = pytest.mark.skipif(not available(), reason="no git binary on this machine")

TOKEN = "acme-int-" + "7Hq2Wv9Lx4Pz"  # an internal token: no redaction rule knows it


def test_purge_removes_a_string_from_everything_and_the_history(make_daemon, short_tmp):
    remote = bare(short_tmp)
    d = make_daemon(config=config(remote)).start()
    # Through the socket (as an agent's client), memoryctl for the user's own commands.
    note = d.call("memory_write", {"content": f"The staging deploy uses {TOKEN} for the "
                                   "registry", "category": "knowledge",
                                   "title": f"{TOKEN} registry", "tags": [TOKEN]})
    d.call("memory_update", {"id": note["id"],
                             "content": f"Staging and prod both use {TOKEN} now"})
    gone = d.call("memory_write", {"content": f"old: {TOKEN} was for the v1 registry",
                                   "category": "knowledge"})
    d.call("memory_delete", {"id": gone["id"]})
    turn = d.call("memory_remember", {"session": "s1", "role": "user",
                                      "content": f"remember that the registry uses {TOKEN}"})
    assert turn["stored"] and "redacted" not in turn  # no rule knew it
    d.call("memory_write", {"content": "Ann likes climbing", "category": "people"})
    wait_for(lambda: d.call("stats")["backlog"] == 0, timeout=120, what="the turn learned")
    wait_for(lambda: clean(d.root), timeout=SLOW, what="a commit of everything")
    assert d.call("memory_sync")["error"] is None  # the remote has it too
    assert TOKEN.encode() in _everything(d.root)

    counted = ok(d, "purge", TOKEN, "--dry-run")
    assert counted["dry_run"] and counted["occurrences"] >= 5 and counted["git"]["file_versions"]
    assert TOKEN.encode() in _everything(d.root)  # a dry run changes nothing

    shown = ctl(d, "purge", TOKEN)
    assert shown.returncode == 0, shown.stderr
    assert "REWRITTEN" in shown.stdout and "push --force" in shown.stdout
    assert "nothing memoryd keeps holds it any more" in shown.stdout
    assert "refused" not in shown.stdout
    assert TOKEN.encode() not in _everything(d.root)  # files, names, indexes, git objects
    assert b"[PURGED]" in _everything(d.root)
    kept = d.call("memory_read", {"id": note["id"]})  # its front matter still reads
    assert kept["content"] == "Staging and prod both use [PURGED] now"
    assert kept["title"] == "PURGED registry" and kept["tags"] == ["PURGED"]
    assert d.call("memory_search", {"query": "climbing"})["memories"][0]["content"] == (
        "Ann likes climbing")
    assert d.call("memory_search", {"query": TOKEN})["memories"] == []

    # The remote still has the old history: no fetch, no merge, a failed sync.
    failed = ctl(d, "--json", "sync")
    refused = json.loads(failed.stdout)
    assert failed.returncode == 1 and "push --force" in (refused["error"] or ""), refused
    assert TOKEN.encode() not in _everything(d.root)
    nothing = d.call("memory_purge", {"text": "never-there-9Zq", "dry_run": True})
    assert nothing["push"] is None and nothing["occurrences"] == 0
    command = shlex.split(shown.stdout.split("replace it there with\n", 1)[1].splitlines()[0])
    assert command[:2] == ["git", "-C"]
    subprocess.run(command, check=True, capture_output=True)
    synced(d)  # the remote has the new history: syncs go on
    d.call("memory_write", {"content": "after the purge", "category": "knowledge"})
    assert d.call("memory_sync")["error"] is None  # commits what is new, and sends it
    remote_objects = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"],
                                    cwd=remote, capture_output=True, check=True).stdout
    # The remote's own old objects stay until it collects them: only the branch moved.
    assert git(remote, "rev-parse", "HEAD") == git(d.root, "rev-parse", "HEAD")
    assert TOKEN.encode() not in subprocess.run(
        ["git", "log", "-p", "--all"], cwd=remote, capture_output=True, check=True).stdout
    assert remote_objects
    assert d.stop() == 0


def test_purge_is_the_users_and_refuses_a_word(make_daemon):
    d = make_daemon().start()
    short = ctl(d, "purge", "the")
    assert short.returncode != 0 and "length >= 6" in short.stderr
    with d.client() as agent:
        agent.call("initialize", {"clientInfo": {"name": "claude"}})
        with pytest.raises(RpcFailure) as refused:
            agent.call("memory_purge", {"text": "long-enough-text"})
        assert refused.value.code == -32003
    assert d.stop() == 0
