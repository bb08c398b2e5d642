"""`memoryd migrate --layout readable`: a root of `<id>.md` files renamed to readable
names, resumable after a run cut short, the catalog following (the next start reads
nothing again), git showing renames."""

from __future__ import annotations

import subprocess
import sys

import pytest

from memoryd import migrate as migration
from memoryd.store.files import MarkdownStore
from tests.rig import Rig

NOTES = ["# Ann Smith\n\nWorks at the bakery.", "# Garden plan\n\nTomatoes in May.",
         "Remember the spare key is under the mat.", "# Ann Smith\n\nA second Ann."]


async def _old_root(tmp_path) -> tuple[Rig, dict[str, str]]:
    """A root as an older memoryd left it: every note at categories/<c>/<id>.md."""
    rig = Rig(tmp_path)
    await rig.start()
    ids = {}
    for text in NOTES:
        m = await rig.result("memory_write", content=text, category="knowledge")
        ids[m["id"]] = text
    rig.close()
    folder = tmp_path / "categories" / "knowledge"
    for path in folder.iterdir():
        memory_id = next(i for i in ids if path.name.endswith(f"-{i[:8]}.md"))
        path.rename(folder / f"{memory_id}.md")
    rig = Rig(tmp_path)
    await rig.start()  # indexes the old names
    rig.close()
    return rig, ids


def _names(tmp_path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "categories" / "knowledge").iterdir())


async def test_a_root_is_renamed_once_and_the_next_start_reads_nothing(tmp_path):
    _, ids = await _old_root(tmp_path)
    before = _names(tmp_path)
    planned = migration.migrate(tmp_path, dry_run=True)
    assert len(planned.renamed) == 4 and _names(tmp_path) == before
    done = migration.migrate(tmp_path)
    assert sorted(to for _, to in done.renamed) == sorted(to for _, to in planned.renamed)
    names = _names(tmp_path)
    assert sum(n.startswith("ann-smith-") for n in names) == 2
    assert any(n.startswith("garden-plan-") for n in names)
    assert any(n.startswith("remember-the-spare-key-is-under-the-mat-") for n in names)
    again = migration.migrate(tmp_path)
    assert (again.renamed, again.kept) == ([], 4)
    rig = Rig(tmp_path)
    summary = await rig.start()
    try:
        assert summary["files_read"] == 0  # the catalog knew each file's new name
        for memory_id, text in ids.items():
            assert (await rig.result("memory_read", id=memory_id))["content"] == text
    finally:
        rig.close()


async def test_a_run_cut_short_is_finished_by_the_next(tmp_path, monkeypatch):
    _, ids = await _old_root(tmp_path)
    monkeypatch.setattr(migration, "BATCH", 1)
    real, calls = MarkdownStore.replace, []

    def dies_on_the_third(self, src, dst, sync=True):
        calls.append(src)
        if len(calls) == 3:
            raise KeyboardInterrupt  # as a kill would, between two renames
        return real(self, src, dst, sync)

    monkeypatch.setattr(MarkdownStore, "replace", dies_on_the_third)
    with pytest.raises(KeyboardInterrupt):
        migration.migrate(tmp_path)
    monkeypatch.setattr(MarkdownStore, "replace", real)
    assert sum(n.removesuffix(".md") in ids for n in _names(tmp_path)) == 2
    finished = migration.migrate(tmp_path)
    assert len(finished.renamed) == 2 and not any(
        n.removesuffix(".md") in ids for n in _names(tmp_path))
    rig = Rig(tmp_path)
    await rig.start()
    try:
        listed = await rig.result("memory_list", category="knowledge")
        assert sorted(m["id"] for m in listed["memories"]) == sorted(ids)
    finally:
        rig.close()


def test_the_command_refuses_a_running_daemon_and_git_shows_renames(daemon):
    written = daemon.call("memory_write", {"content": "# Kept\n\ntext", "category": "people"})
    cmd = [sys.executable, "-m", "memoryd", "migrate", "--layout", "readable", "--root",
           str(daemon.root)]
    refused = subprocess.run(cmd, capture_output=True, text=True)
    assert refused.returncode != 0 and "stop it first" in refused.stderr
    daemon.stop()
    folder = daemon.root / "categories" / "people"
    (path,) = folder.iterdir()
    path.rename(folder / f"{written['id']}.md")
    subprocess.run(["git", "-C", str(daemon.root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(daemon.root), "-c", "user.name=t", "-c",
                    "user.email=t@x", "commit", "-qm", "old layout"], check=True)
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0 and "renamed 1 files" in done.stdout, done.stderr
    shown = subprocess.run(["git", "-C", str(daemon.root), "show", "--name-status",
                            "--format=%s", "HEAD"], capture_output=True, text=True).stdout
    assert "R100\tcategories/people/" in shown and "kept-" in shown
