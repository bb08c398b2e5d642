"""Data in and out against real daemons: memoryctl ingest (progress over the socket),
export to a file, import into another root, export again: the same bytes."""

from __future__ import annotations

import shutil

from tests.e2e.test_lifecycle import wait_for
from tests.e2e.test_memoryctl import ctl, ok
from tests.ingest.test_sources import FIXTURES


def test_ingest_export_import_round_trip_with_memoryctl(make_daemon, short_tmp) -> None:
    vault = short_tmp / "vault"
    shutil.copytree(FIXTURES / "vault", vault)
    first = make_daemon("one").start()

    notes: list[dict] = []
    with first.client() as client:
        result = client.call("tools/call", {
            "name": "memory_ingest", "arguments": {"source": "obsidian", "path": str(vault)},
            "_meta": {"progressToken": "p1"}}, on_notification=notes.append)
    assert result["structuredContent"]["added"] == 4
    progress = [n["params"] for n in notes if n["method"] == "notifications/progress"]
    assert progress and progress[-1] == {"progressToken": "p1", "progress": 4, "total": 4,
                                         "message": progress[-1]["message"]}

    again = ctl(first, "ingest", "--source", "obsidian", "--path", str(vault))
    assert again.returncode == 0, again.stderr
    assert "added 0, updated 0, unchanged 4" in again.stdout
    assert "skipped 2: not Markdown" in again.stdout
    ok(first, "remember", "s1", "user", "I keep bees in the garden behind the house.")
    wait_for(lambda: first.call("stats")["backlog"] == 0, timeout=60, what="the backlog")
    exported = short_tmp / "out.jsonl"
    proc = ctl(first, "export", "--output", str(exported), "--include-trash")
    assert proc.returncode == 0 and "exported 7 memories" in proc.stdout, proc.stderr

    second = make_daemon("two").start()
    proc = ctl(second, "import", "--input", str(exported))
    assert proc.returncode == 0 and proc.stdout.startswith("imported 7,"), proc.stderr
    stdout = ctl(second, "export", "--include-trash")
    assert stdout.returncode == 0
    assert stdout.stdout == exported.read_text()

    bad = short_tmp / "bad.jsonl"
    bad.write_text(exported.read_text() + "{oops\n")
    proc = ctl(second, "import", "--input", str(bad))
    assert "skipped 7 (already there), failed 1" in proc.stdout
    assert "line 8: not a JSON object" in proc.stdout
