"""The marked section of a context file: regenerated in place, the rest untouched."""

from __future__ import annotations

import pytest

from memoryctl.context_file import BEGIN, EMPTY, END, merged, write
from memoryctl.files import SettingsError


def test_the_section_is_added_once_then_replaced_in_place():
    mine = "# Repo\n\nBuild with make.\n"
    first = merged(mine, "<memory>\n[SEMANTIC] a\n</memory>")
    assert first == f"{mine}\n{BEGIN}\n<memory>\n[SEMANTIC] a\n</memory>\n{END}\n"
    edited = first + "\n## Later notes of the user\n"
    second = merged(edited, "<memory>\n[SEMANTIC] b\n</memory>")
    assert second.startswith(mine) and "[SEMANTIC] b" in second and "[SEMANTIC] a" not in second
    assert second.endswith(f"{END}\n\n## Later notes of the user\n")
    assert merged("", "") == f"{BEGIN}\n{EMPTY}\n{END}\n"


def test_write_says_whether_anything_changed(tmp_path):
    path = tmp_path / "AGENTS.md"
    assert write(path, "<memory>\nx\n</memory>") is True
    assert write(path, "<memory>\nx\n</memory>") is False
    assert path.read_text().count(BEGIN) == 1


def test_a_context_file_that_links_out_of_the_project_is_left_alone(tmp_path):
    outside = tmp_path / "elsewhere" / "notes.md"
    outside.parent.mkdir()
    outside.write_text("mine\n")
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    agents = repo / "AGENTS.md"
    agents.symlink_to(outside)
    with pytest.raises(SettingsError, match="outside"):
        write(agents, "<memory>\nx\n</memory>", within=repo)
    assert outside.read_text() == "mine\n"
    agents.unlink()
    agents.symlink_to(tmp_path / "gone" / "AGENTS.md")
    with pytest.raises(SettingsError, match="does not exist"):
        write(agents, "<memory>\nx\n</memory>", within=repo)
    assert not (tmp_path / "gone").exists()
    agents.unlink()
    agents.symlink_to(repo / "docs" / "AGENTS.md")  # a link inside the project is followed
    (repo / "docs" / "AGENTS.md").write_text("# Agents\n")
    assert write(agents, "<memory>\nx\n</memory>", within=repo) is True
    assert agents.is_symlink() and BEGIN in (repo / "docs" / "AGENTS.md").read_text()
