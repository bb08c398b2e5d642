"""Names map to scopes one to one, and what a name wrote under its earlier scope is
found again: the daemon says where (in its log) and `memoryd rescope` moves it."""

from __future__ import annotations

import subprocess
import sys

from structlog.testing import capture_logs

from memoryd.rescope import rescope
from memoryd.scopes import agent_scope, earlier_agent_scope
from tests.layout import file_of
from tests.rig import Rig
from tests.test_scopes import Client

NAME = "Visual Studio Code"


async def test_an_agents_earlier_scope_is_named_in_the_log_and_moved_by_rescope(tmp_path):
    earlier, now = earlier_agent_scope(NAME), agent_scope(NAME)
    assert (earlier, now[:len(earlier)]) == ("agent:Visual-Studio-Code", earlier)
    root = tmp_path / "root"
    rig = Rig(root)
    await rig.start()
    try:
        user = Client(rig)
        await user.start()
        for text in ("The build runs with make -j4", "Tabs, not spaces, in Makefiles"):
            await user.ok("memory_write", content=text, scope=earlier)
        await user.ok("memory_remember", session="vs-1", role="user",
                      content="Remember that the staging server is called kestrel",
                      scope=earlier)
        await user.ok("memory_write", content="A note for everyone", scope="global")
        other = Client(rig, "Visual-Studio-Code")  # the name that is that scope now
        await other.start()
        assert (await other.ok("memory_list", scope=earlier))["total"] == 3
        with capture_logs() as logs:
            vs = Client(rig, NAME)
            assert (await vs.start())["agent"] == now
        moved = [e for e in logs if e["event"] == "agent.scope_moved"]
        assert len(moved) == 1 and moved[0]["memories"] == 3
        assert moved[0]["then"] == f"stop memoryd and run: memoryd rescope {earlier} {now}"
        assert (await vs.code("memory_list", scope=earlier)) == -32003  # not its scope now
    finally:
        rig.close()

    done = rescope(root, earlier, now)
    assert (done.moved, done.unreadable) == (3, [])

    rig = Rig(root)
    await rig.start()
    try:
        vs = Client(rig, NAME)
        await vs.start()
        mine = (await vs.ok("memory_list", scope=now))["memories"]
        assert sorted(m["content"][:9] for m in mine) == ["Remember ", "Tabs, not",
                                                          "The build"]
        assert all(m["version"] == 2 for m in mine)
        recalled = await vs.ok("memory_recall", query="staging server", session="vs-1")
        assert "kestrel" in recalled["text"]
        other = Client(rig, "Visual-Studio-Code")
        await other.start()
        assert (await other.ok("memory_list", scope=earlier))["total"] == 0
        assert (await other.ok("memory_list"))["total"] == 1  # global
    finally:
        rig.close()


def test_the_rescope_command_checks_its_scopes_and_the_lock(daemon, tmp_path):
    def run(*args: str):
        return subprocess.run([sys.executable, "-m", "memoryd", "rescope", *args],
                              capture_output=True, text=True, timeout=120)

    bad = run("agent:a", "agent:../b", "--root", str(tmp_path))
    assert bad.returncode == 2 and "is not a scope" in bad.stderr
    running = run("agent:a", "agent:b", "--root", str(daemon.root))
    assert running.returncode == 1 and "stop it first" in running.stderr
    empty = tmp_path / "empty"
    (empty / "categories").mkdir(parents=True)
    ok = run("agent:a", "agent:b", "--root", str(empty))
    assert ok.returncode == 0 and ok.stdout.startswith("moved 0 memories"), ok.stderr


async def test_rescope_keeps_the_wikilinks_obsidian_reads(tmp_path):
    root = tmp_path / "root"
    rig = Rig(root)
    await rig.start()
    try:
        a = await rig.result("memory_write", content="Ann", category="people", scope="agent:old")
        b = await rig.result("memory_write", content="Bea", category="people", scope="agent:old")
        await rig.result("memory_link", source=a["id"], target=b["id"])
    finally:
        rig.close()
    assert f"[[{file_of(root, b).stem}]]" in file_of(root, a).read_text()
    assert rescope(root, "agent:old", "agent:new").moved == 2
    after = file_of(root, a).read_text()
    assert "scope: agent:new" in after and f"[[{file_of(root, b).stem}]]" in after
