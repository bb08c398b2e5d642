"""A project's identity: every spelling of a remote, every clone and worktree of one
repository is one project; two repositories of one name stay apart."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from memoryctl.project import normalise_remote, of_folder, scope_for
from memoryd.schema import SCOPE_PATTERN
from tests.e2e.test_coding_agents import git, repository

pytestmark = pytest.mark.skipif(subprocess.run(["git", "--version"], capture_output=True)
                                .returncode != 0, reason="no git binary on this machine")


@pytest.mark.parametrize("url", [
    "git@github.com:acme/shop.git", "https://github.com/acme/shop",
    "ssh://git@github.com/acme/shop.git", "https://user:s3cret@GitHub.com/acme/shop/",
    "ssh://git@github.com:22/acme/shop", "git://github.com/acme/shop.git",
    "https://github.com:443/acme/shop.git", "github.com:acme/shop",
    "https://github.com/ACME/Shop", "git@GitHub.com:Acme/SHOP.git"])
def test_one_repository_whatever_its_remote_is_called(url):
    assert normalise_remote(url) == "github.com/acme/shop"


def test_what_is_not_the_same_repository_stays_apart():
    assert normalise_remote("https://gitea.example:3000/acme/shop.git") == (
        "gitea.example:3000/acme/shop")
    # a host that may tell case apart keeps it
    assert normalise_remote("https://git.example/Acme/Shop") == "git.example/Acme/Shop"
    assert normalise_remote("/srv/git/shop.git") == normalise_remote("file:///srv/git/shop")
    assert scope_for("github.com/acme/shop") != scope_for("github.com/other/shop")
    scope = scope_for("github.com/acme/shop")
    assert scope.startswith("project:shop-") and len(scope) == len("project:shop-") + 8
    for identity in ("github.com/a/../..", "/", "github.com/a/" + "x" * 300, "/home/u/項目"):
        assert re.match(SCOPE_PATTERN, scope_for(identity)), identity


def test_clones_and_worktrees_are_one_project(tmp_path):
    main, other = repository(tmp_path)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(main), str(clone))
    git(clone, "remote", "set-url", "origin", "https://github.com/acme/shop")
    (main / "sub").mkdir()
    found = {of_folder(p).scope for p in (main, main / "sub", other, clone)}
    assert len(found) == 1
    assert of_folder(other).root == other.resolve() and of_folder(main / "sub").root == main


def test_without_a_remote_the_main_work_tree_is_the_project(tmp_path):
    main, other = repository(tmp_path)
    git(main, "remote", "remove", "origin")
    assert of_folder(main).identity == str(main.resolve()) == of_folder(other).identity
    lone = tmp_path / "plain-folder"
    lone.mkdir()
    outside = of_folder(lone)
    assert outside.root is None and outside.identity == str(lone.resolve())
    assert of_folder(Path(tmp_path / "absent")).scope.startswith("project:absent-")


def test_a_remote_url_with_a_line_break_is_no_other_projects(tmp_path):
    """A URL holding a newline (git takes one in its config) could read as another
    remote's line: it is not used, and the folder is the repository's own project."""
    main, _ = repository(tmp_path)
    git(main, "remote", "remove", "origin")
    git(main, "config", "remote.aaa.url",
        "https://evil.example/x\nremote.origin.url https://github.com/victim/app")
    found = of_folder(main)
    assert found.identity == str(main.resolve())
    assert found.scope != scope_for("github.com/victim/app")
