"""Installing memoryd's hooks into an agent's settings: the user's file kept whole but
for memoryd's own hooks; refused, and untouched, when it cannot be merged."""

from __future__ import annotations

import json
import os

import pytest

from memoryctl.agents import AGENTS
from memoryctl.hook_settings import SettingsError, install, is_ours, uninstall

CLAUDE = AGENTS["claude-code"]
CMD = "/opt/venv/bin/memoryctl hook claude-code"
USERS = {"permissions": {"allow": ["Bash(make:*)"]}, "hooks": {
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit"}]}]},
    "env": {"A": "1"}}


def test_install_adds_each_event_once_and_keeps_everything_else(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(USERS))
    os.chmod(path, 0o640)
    first = install(CLAUDE, path, CMD)
    assert first.added == list(CLAUDE.events) and first.backup is not None
    assert json.loads(first.backup.read_text()) == USERS
    again = install(CLAUDE, path, CMD)
    assert again.removed == len(CLAUDE.events)  # replaced, not doubled
    data = json.loads(path.read_text())
    assert list(data) == ["permissions", "hooks", "env"] and data["env"] == {"A": "1"}
    assert data["hooks"]["Stop"][0] == USERS["hooks"]["Stop"][0]
    assert data["hooks"]["PreToolUse"] == USERS["hooks"]["PreToolUse"]
    ours = [h for groups in data["hooks"].values() for g in groups for h in g["hooks"]
            if is_ours(h, CLAUDE)]
    assert len(ours) == len(CLAUDE.events)
    assert {h["timeout"] for h in ours} <= {15, 10, 60}
    assert oct(path.stat().st_mode & 0o777) == oct(0o640)
    gone = uninstall(CLAUDE, path)
    assert gone.removed == len(CLAUDE.events) and json.loads(path.read_text()) == USERS


def test_a_hook_the_user_added_beside_ours_stays(tmp_path):
    path = tmp_path / "settings.json"
    install(CLAUDE, path, CMD)
    data = json.loads(path.read_text())
    data["hooks"]["Stop"][0]["hooks"].append({"type": "command", "command": "say bye"})
    path.write_text(json.dumps(data))
    uninstall(CLAUDE, path)
    assert json.loads(path.read_text()) == {"hooks": {"Stop": [
        {"hooks": [{"type": "command", "command": "say bye"}]}]}}
    assert not is_ours({"command": "memoryctl hook codex"}, CLAUDE)
    assert is_ours({"command": "'/a b/memoryctl' hook claude-code --root /x"}, CLAUDE)


def test_gemini_hooks_are_named_and_count_milliseconds(tmp_path):
    path = tmp_path / "settings.json"
    install(AGENTS["gemini"], path, "memoryctl hook gemini")
    (group,) = json.loads(path.read_text())["hooks"]["BeforeAgent"]
    assert group["hooks"] == [{"name": "memoryd-prompt", "type": "command",
                               "command": "memoryctl hook gemini", "timeout": 10000}]


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"hooks": []}',
                                  '{"hooks": {"Stop": {"hooks": []}}}'])
def test_a_file_that_cannot_be_merged_is_left_alone(tmp_path, text):
    path = tmp_path / "settings.json"
    path.write_text(text)
    with pytest.raises(SettingsError):
        install(CLAUDE, path, CMD)
    assert path.read_text() == text
    assert not (tmp_path / "settings.json.memoryd-backup").exists()


def test_a_linked_settings_file_stays_a_link_and_dry_run_writes_nothing(tmp_path):
    dotfiles = tmp_path / "dotfiles" / "claude.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text("{}")
    link = tmp_path / "settings.json"
    link.symlink_to(dotfiles)
    shown = install(CLAUDE, link, CMD, dry_run=True)
    assert "UserPromptSubmit" in shown.text and dotfiles.read_text() == "{}"
    install(CLAUDE, link, CMD)
    assert link.is_symlink() and "UserPromptSubmit" in dotfiles.read_text()
    assert uninstall(CLAUDE, tmp_path / "absent.json").removed == 0


def test_a_repository_cannot_turn_the_install_into_a_write_elsewhere(tmp_path):
    """A project's settings (`hooks install --project`) come from a repository: a backup
    name that is a link is replaced, not written through; a settings file that links out
    of the project, to nothing, or is a FIFO is left alone with a reason."""
    outside = tmp_path / "home" / ".bashrc"
    outside.parent.mkdir()
    outside.write_text("export PATH=/usr/bin\n")
    repo = tmp_path / "repo"
    (repo / ".claude").mkdir(parents=True)
    settings = repo / ".claude" / "settings.json"
    settings.write_text(json.dumps(USERS))
    planted = settings.with_name("settings.json.memoryd-backup")
    planted.symlink_to(outside)
    change = install(CLAUDE, settings, CMD, within=repo)
    assert change.backup == planted and not planted.is_symlink()
    assert json.loads(planted.read_text()) == USERS
    assert outside.read_text() == "export PATH=/usr/bin\n"

    settings.unlink()
    settings.symlink_to(outside)
    with pytest.raises(SettingsError, match="outside"):
        install(CLAUDE, settings, CMD, within=repo)
    settings.unlink()
    settings.symlink_to(tmp_path / "nowhere" / "settings.json")
    with pytest.raises(SettingsError, match="does not exist"):
        install(CLAUDE, settings, CMD, within=repo)
    assert not (tmp_path / "nowhere").exists()
    settings.unlink()
    os.mkfifo(settings)
    with pytest.raises(SettingsError, match="not a regular file"):
        install(CLAUDE, settings, CMD, within=repo)  # and it did not block on the FIFO
    assert outside.read_text() == "export PATH=/usr/bin\n"


@pytest.mark.parametrize("text", [
    '{\n    "env": {"A": "1"},\n    "permissions": {"allow": ["Bash(make:*)"]}\n}',  # 4, no \n
    '{\n\t"model": "opus",\n\t"hooks": {\n\t\t"Stop": []\n\t}\n}\n',  # tabs
    '{"theme":"dark","env":{"Ü":"ü"}}\n',  # one line, not ASCII
])
def test_uninstall_gives_the_file_back_byte_for_byte(tmp_path, text):
    """Installed twice and uninstalled: the file is what it was, to the byte; the copy
    kept at the install is the file before it, and the uninstall keeps its own."""
    path = tmp_path / "settings.json"
    path.write_text(text)
    install(CLAUDE, path, CMD)
    install(CLAUDE, path, CMD)  # again: the copy kept is still the user's own
    backup = tmp_path / "settings.json.memoryd-backup"
    assert backup.read_text() == text
    gone = uninstall(CLAUDE, path)
    assert gone.removed == len(CLAUDE.events)
    assert path.read_bytes() == text.encode()
    assert backup.read_text() == text
    assert gone.backup == tmp_path / "settings.json.memoryd-uninstall-backup"
    assert "memoryctl hook claude-code" in gone.backup.read_text()


def test_an_uninstall_after_other_changes_keeps_them_in_the_files_own_layout(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text('{\n    "env": {\n        "A": "1"\n    }\n}\n')
    install(CLAUDE, path, CMD)
    assert path.read_text().startswith('{\n    "env": {\n        "A": "1"')  # its indent
    data = json.loads(path.read_text())
    data["env"]["B"] = "2"  # the user (or the agent) changed a setting meanwhile
    path.write_text(json.dumps(data, indent=4) + "\n")
    uninstall(CLAUDE, path)
    assert path.read_text() == '{\n    "env": {\n        "A": "1",\n        "B": "2"\n    }\n}\n'
    assert (tmp_path / "settings.json.memoryd-backup").read_text() == \
        '{\n    "env": {\n        "A": "1"\n    }\n}\n'
