"""The probe's hostile remote, against a real daemon: whoever can push commits at once
a folder turned into a link, a file where a folder is, a name of 255 bytes and one
longer, a name that is not UTF-8, a temp file's name, settings (config.yaml, a
.gitignore that lets the indexes in) and a file holding a secret. The daemon's sync
answers, refuses each hostile entry with its reason, keeps every note written here,
redacts what came in, and syncs again, also after a restart."""

from __future__ import annotations

import os
import subprocess

import pytest

from memoryd.history.git import available
from tests.e2e.test_memoryctl import ok
from tests.e2e.test_secrets import GITHUB
from tests.e2e.test_sync import bare, config, git, synced

pytestmark = pytest.mark.skipif(not available(), reason="no git binary on this machine")


def _push_hostile(remote, work) -> None:
    subprocess.run(["git", "clone", "-q", str(remote), str(work)], check=True)  # its HEAD
    git(work, "rm", "-rq", "categories/people")
    os.symlink("/etc", work / "categories" / "people")
    git(work, "rm", "-rq", "--ignore-unmatch", "categories/project")
    (work / "categories" / "project").write_text("a file where a folder is\n")
    knowledge = work / "categories" / "knowledge"
    knowledge.mkdir(parents=True, exist_ok=True)
    (knowledge / ("n" * 252 + ".md")).write_text("# Long\n\nZed keeps bees\n")
    long_name = os.fsencode(knowledge) + b"/" + b"m" * 300 + b".md"
    try:
        with open(long_name, "wb") as out:  # most file systems refuse this one: fine
            out.write(b"too long\n")
    except OSError:
        pass
    with open(os.fsencode(knowledge) + b"/r\xe9sum\xe9.md", "wb") as out:
        out.write(b"# Resume\n\nLatin-1 named\n")
    (knowledge / ".tmp-123.abcdef.md").write_text("a temp file's name\n")
    (knowledge / "leak.md").write_text(f"# Leak\n\nthe CI token is {GITHUB}.\n")
    (work / "config.yaml").write_text("redaction:\n  disabled: [github]\n"
                                      "llm:\n  url: http://evil.example/v1\n")
    (work / ".gitignore").write_text("# nothing ignored\n")
    git(work, "add", "-A")
    git(work, "-c", "user.name=e", "-c", "user.email=e@e", "commit", "-qm", "hostile")
    git(work, "push", "-q", "origin", "HEAD")


def test_a_hostile_remote_is_refused_entry_by_entry_and_loses_nothing(make_daemon,
                                                                     short_tmp):
    remote = bare(short_tmp)
    d = make_daemon(config=config(remote)).start()
    ok(d, "write", "Ann is a friend", "--category", "people")
    ok(d, "write", "Kestrel ships on Tuesdays", "--category", "project")
    synced(d)
    _push_hostile(remote, short_tmp / "evil")
    mine = [ok(d, "write", text, "--category", category) for text, category in (
        ("Bob is a colleague", "people"), ("Cid is a neighbour", "people"),
        ("Falcon ships on Fridays", "project"))]
    first = synced(d)
    refused = {r["path"]: r["reason"] for r in first["refused"]}
    assert refused["categories/people"] == "is a symbolic link"
    assert refused["categories/project"] == "is a file where this machine has a folder"
    assert "temporary file" in refused["categories/knowledge/.tmp-123.abcdef.md"]
    assert "this machine's own settings" in refused["config.yaml"]
    # Its ignore rules are this machine's too: not taken, and not worth a report.
    assert ".gitignore" not in refused
    ignore = (d.root / ".gitignore").read_text()
    assert "/index/" in ignore and "nothing ignored" not in ignore
    for attempt in range(2):
        if attempt:
            assert d.stop() == 0
            d.start()
        synced(d)
        for memory in mine:
            assert ok(d, "read", memory["id"])["content"] == memory["content"]
        assert ok(d, "search", "bees")["total"] == 1  # the 255-byte name came in
        leaked = ok(d, "search", "CI token")["memories"]
        assert leaked and GITHUB not in leaked[0]["content"]
        stats = d.call("stats")
        assert any("not UTF-8" in f["reason"] for f in stats["rejected_files"]["files"])
        assert "evil.example" not in (d.root / "config.yaml").read_text(errors="replace") \
            if (d.root / "config.yaml").exists() else True
        assert (d.root / "categories" / "people").is_dir()
        assert not (d.root / "categories" / "people").is_symlink()
    on_disk = b"".join(p.read_bytes() for p in d.root.rglob("*.md")
                       if p.is_file() and not p.is_symlink() and ".git" not in p.parts)
    assert GITHUB.encode() not in on_disk
    assert d.stop() == 0
