"""The marked section of a context file: regenerated in place, the rest untouched."""

from __future__ import annotations

from memoryctl.context_file import BEGIN, EMPTY, END, merged, write


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
