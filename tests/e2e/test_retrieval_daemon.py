"""Ranked retrieval through a real daemon: hand edits, telemetry, a Chroma server."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.e2e.test_lifecycle import wait_for
from tests.layout import file_of


def test_hand_edits_reach_smart_search(daemon):
    m = daemon.call("memory_write", {"content": "The router admin password is in 1Password",
                                     "category": "knowledge"})
    path = file_of(daemon.root, m, "knowledge")
    path.write_text(path.read_text().replace("The router admin password is in 1Password",
                                             "The boat trailer is parked at Anna's farm"))

    def top() -> str | None:
        found = daemon.call("memory_smart_search", {"query": "where is the boat trailer"})
        return found["memories"][0]["content"] if found["memories"] else None

    assert wait_for(lambda: top() == "The boat trailer is parked at Anna's farm",
                    what="the edit in the vectors")
    new = daemon.root / "categories/people/neighbour.md"
    new.write_text("Our neighbour Tomasz repairs bicycles\n")
    def top_id(query: str) -> str | None:
        found = daemon.call("memory_smart_search", {"query": query})["memories"]
        return found[0]["id"] if found else None

    wait_for(lambda: top_id("who can fix my bike") == "neighbour",
             what="the new file in the vectors")


def test_no_telemetry_files_are_written(daemon):
    daemon.call("memory_write", {"content": "telemetry probe"})
    daemon.call("memory_smart_search", {"query": "probe"})
    home = daemon.root.parent  # the fixture runs the daemon with HOME here
    assert not (home / ".cache" / "Microsoft").exists()
    assert not (home / ".cache" / "chroma").exists()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_vectors_on_a_chroma_server(make_daemon, short_tmp):
    port = _free_port()
    chroma = Path(sys.executable).parent / "chroma"
    server = subprocess.Popen([str(chroma), "run", "--path", str(short_tmp / "chroma-srv"),
                               "--host", "127.0.0.1", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def up() -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat",
                                            timeout=1) as r:
                    return r.status == 200
            except OSError:
                return False

        wait_for(up, 60, "chroma run")
        d = make_daemon(config=f"vectors:\n  url: http://127.0.0.1:{port}\n").start()
        a = d.call("memory_write", {"content": "The climbing gym opens at 7 on Sundays"})["id"]
        d.call("memory_write", {"content": "Dentist appointment moved to Friday"})
        found = d.call("memory_smart_search", {"query": "when does the gym open"})
        assert found["memories"][0]["id"] == a
        assert not (d.root / "index" / "chroma").exists(), "no local vector store"
        assert d.stop() == 0
        # a full rebuild: the vectors come back from the server with their labels (over
        # its JSON) and nothing is embedded again
        (d.root / "index" / "corpus.snapshot").unlink()
        d.start()
        assert d.call("memory_smart_search", {"query": "gym hours"})["memories"][0]["id"] == a
        events = [json.loads(x) for x in d.log.splitlines() if x.startswith("{")]
        reconciled = [e for e in events if e.get("event") == "index.reconciled"]
        assert reconciled[-1]["vectors_embedded"] == 0
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
        time.sleep(0.1)
