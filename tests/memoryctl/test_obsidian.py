"""`memoryctl obsidian`: memoryd's machinery in the vault's excluded files, the user's
own Obsidian settings kept, Obsidian's churn out of git."""

from __future__ import annotations

import json

import pytest

from memoryctl.obsidian import GIT_IGNORED, configure


def test_filters_are_merged_into_the_users_settings(tmp_path):
    app = tmp_path / ".obsidian" / "app.json"
    app.parent.mkdir()
    app.write_text(json.dumps({"vimMode": True, "userIgnoreFilters": ["drafts/"]}))
    (tmp_path / ".gitignore").write_text("/index/\n")
    shown = configure(tmp_path, dry_run=True)
    assert shown["added"] == ["index/", "trash/", "sessions/"]
    assert json.loads(app.read_text())["userIgnoreFilters"] == ["drafts/"]
    configure(tmp_path)
    settings = json.loads(app.read_text())
    assert settings == {"vimMode": True, "userIgnoreFilters": [
        "drafts/", "index/", "trash/", "sessions/"]}
    assert (tmp_path / ".gitignore").read_text().splitlines()[0] == "/index/"
    assert all(line in (tmp_path / ".gitignore").read_text() for line in GIT_IGNORED)
    again = configure(tmp_path, show_sessions=True)
    assert again["added"] == [] and again["git_ignored"] == []
    assert json.loads(app.read_text())["userIgnoreFilters"] == ["drafts/", "index/", "trash/"]


@pytest.mark.parametrize("text", ["{oops", "[]", '{"userIgnoreFilters": "index/"}'])
def test_settings_it_cannot_read_are_left_alone(tmp_path, text):
    app = tmp_path / ".obsidian" / "app.json"
    app.parent.mkdir()
    app.write_text(text)
    with pytest.raises(ValueError, match="left alone"):
        configure(tmp_path)
    assert app.read_text() == text
