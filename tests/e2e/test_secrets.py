"""Secrets a user pastes never reach disk: written, remembered (and learned from),
updated, imported and ingested through a real daemon with git history on, then looked
for in every file under the root (the catalog, chromadb's files, every git object,
uncompressed) and in the daemon's log."""

from __future__ import annotations

import json
import subprocess

import pytest

from memoryd.history.git import available
from tests.e2e.test_git_history import SLOW, git
from tests.e2e.test_lifecycle import wait_for
from tests.e2e.test_memoryctl import ok

pytestmark = pytest.mark.skipif(not available(), reason="no git binary on this machine")

GITHUB = "ghp_" + "Q7w3E9r1T5y8U2i4O6p0A1s3D5f7G9h2J4k6"
OPENAI = "sk-proj-" + "Zq8Xw2Ec4Rv6Tb8Yn0Um2Il4Ok6Pj8Hg0Fd2Sa4Qw6Er8T"
PASSWORD = "Tr0ub4dor&3xyz"
AWS = "AKIA" + "Q3ZT7W2M9K4P6R8X"
PRIVATE = "the name of my first pet"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
# No provider form: named only by what is before them, and followed by punctuation.
AWS_SECRET = "wJalrXUt" + "nFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"
KEY_VALUE = "b7Xq2Lp9" + "Zr4Tn8Vc1Md6Ks3Hw5Jg0Fy"
EXPORTED = "e3b0c44298fc1c14" + "9afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def _everything(root) -> bytes:
    """Every path and file's bytes under the root, and every git object uncompressed."""
    parts = [p.read_bytes() for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    parts += [str(p).encode() for p in root.rglob("*")]
    objects = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"],
                             cwd=root, capture_output=True, check=True).stdout
    return b"\n".join([*parts, objects])


def test_no_secret_reaches_a_file_an_index_git_or_the_log(make_daemon, tmp_path):
    d = make_daemon(config="git:\n  commit_interval: 1s\n").start()
    written = ok(d, "write", f"deploy with {GITHUB} and note {OPENAI}")
    assert written["redacted"] == 2 and "[REDACTED:github]" in written["content"]
    remembered = d.call("memory_remember", {
        "session": "s1", "role": "user",
        "content": f"My wifi password is {PASSWORD} and <private>{PRIVATE}</private>, "
                   f"I live in Lisbon"})
    assert remembered["stored"] and remembered["redacted"] == 2
    punctuated = d.call("memory_remember", {
        "session": "s1", "role": "user",
        "content": f"For the backup bucket use access key {AWS} and secret {AWS_SECRET}."})
    assert punctuated["redacted"] == 2
    for content in (f"key={KEY_VALUE}.", f"export DB_PASSWORD={EXPORTED}\nthen run it"):
        assert ok(d, "write", content)["redacted"] == 1
    updated = d.call("memory_update", {"id": written["id"], "content": f"rotate {AWS} now"})
    assert updated["redacted"] == 1 and AWS not in updated["content"]
    line = json.dumps({"id": "0f0e0d0c-0b0a-4909-8807-060504030201",
                       "content": f"billing uses {STRIPE}", "created_at": "2026-01-02T03:04:05Z"})
    imported = d.call("memory_import", {"lines": [line]})
    assert (imported["imported"], imported["redacted"]) == (1, 1)
    notes = tmp_path / "vault"
    notes.mkdir()
    (notes / "ops.md").write_text(f"# Ops\n\nThe CI token: {GITHUB}\n")
    report = d.call("memory_ingest", {"source": "markdown", "path": str(notes)})
    assert report["added"] == 1 and report["reports"][0]["redacted"] == 1
    again = d.call("memory_ingest", {"source": "markdown", "path": str(notes)})
    assert again["unchanged"] == 1  # the note as stored: unchanged, not updated again
    wait_for(lambda: d.call("stats")["backlog"] == 0, timeout=120, what="the turn learned")
    stats = d.call("stats")["redacted"]
    assert stats["github"] >= 2 and stats["private"] == 1
    wait_for(lambda: git(d.root, "status", "--porcelain") == "", timeout=SLOW,
             what="a commit of everything")
    assert d.stop() == 0
    found = _everything(d.root) + d.log.encode()
    for secret in (GITHUB, OPENAI, PASSWORD, AWS, PRIVATE, STRIPE, AWS_SECRET, KEY_VALUE,
                   EXPORTED):
        assert secret.encode() not in found, secret
    assert b"[REDACTED:github]" in found  # the files were written, with the marks
