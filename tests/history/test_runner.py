"""Running git: at the background priority, a clear error when it cannot run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from memoryd.history.runner import GitError, git
from memoryd.priority import BACKGROUND_NICE

# A stand-in git that answers with its own niceness once the daemon has lowered it
# (it is lowered just after it starts), or with what it has after many looks.
_NICE_GIT = """#!/bin/sh
i=0
while [ $i -lt 20000 ]; do
  read -r stat < /proc/$$/stat
  set -- $stat
  nice=${19}
  [ "$nice" -ge %d ] && break
  i=$((i+1))
done
echo "$nice"
"""


def _on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "git"
    fake.write_text(script)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")


@pytest.mark.skipif(sys.platform != "linux", reason="a thread's niceness is read from /proc")
async def test_git_runs_at_the_background_priority(tmp_path, monkeypatch) -> None:
    _on_path(tmp_path, monkeypatch, _NICE_GIT % BACKGROUND_NICE)
    out = await git(tmp_path, "status")
    assert int(out.decode().strip()) >= BACKGROUND_NICE


async def test_a_git_that_cannot_run_is_a_clear_error(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    with pytest.raises(GitError, match="cannot run git"):
        await git(tmp_path, "status")


async def test_a_failing_git_names_its_command_and_what_it_said(tmp_path) -> None:
    with pytest.raises(GitError, match=r"git rev-parse failed \(\d+\): .*not a git"):
        await git(tmp_path, "rev-parse", "HEAD")
