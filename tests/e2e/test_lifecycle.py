"""The daemon as a process: concurrency, crashes, signals, locks, hand edits, config."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from memoryd.models.embedder import INT8_ID
from memoryd.models.variant import FORCE_VARIANT
from memoryd_client import Client, DaemonUnavailable, RpcFailure
from tests.layout import file_of


def wait_for(predicate, timeout: float = 10.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_forty_concurrent_clients_lose_nothing(daemon):
    errors: list[BaseException] = []
    written: list[str] = []
    lock = threading.Lock()

    def client(n: int) -> None:
        try:
            with daemon.client() as c:
                for i in range(25):
                    m = c.call("memory_write", {"content": f"client {n} note {i}",
                                                "tags": [f"c{n}"]})
                    with lock:
                        written.append(m["id"])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(set(written)) == 1000
    assert daemon.call("memory_list", {"limit": 1})["total"] == 1000
    assert len(list((daemon.root / "categories/inbox").glob("*.md"))) == 1000
    assert daemon.call("memory_search", {"query": "client note", "tags": ["c7"]})["total"] == 25
    assert daemon.call("memory_list", {"tags": ["c39"]})["total"] == 25


def test_kill_9_under_concurrent_writes_loses_no_acknowledged_memory(make_daemon):
    d = make_daemon().start()
    acked: list[tuple[str, str]] = []
    lock = threading.Lock()
    stop = threading.Event()

    def writer(n: int) -> None:
        try:
            with d.client(timeout=10) as c:
                i = 0
                while not stop.is_set():
                    content = f"crash test writer {n} item {i} zq{n}x{i}q"
                    m = c.call("memory_write", {"content": content})
                    with lock:
                        acked.append((m["id"], content))
                    i += 1
        except (OSError, DaemonUnavailable, RpcFailure):
            pass  # the daemon died mid-request: that write was never acknowledged

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    wait_for(lambda: len(acked) >= 150, 30, "150 acknowledged writes")
    d.kill()
    stop.set()
    for t in threads:
        t.join()
    assert d.proc.returncode == -signal.SIGKILL
    survivors = list(acked)
    d.start()
    with d.client() as c:
        for memory_id, content in survivors:
            assert c.call("memory_read", {"id": memory_id})["content"] == content
        # and searchable: every acknowledged memory is in the keyword index
        for memory_id, content in survivors[:: max(1, len(survivors) // 25)]:
            token = content.split()[-1]
            hits = c.call("memory_search", {"query": token})["memories"]
            assert [h["id"] for h in hits] == [memory_id]
        total = c.call("memory_list", {"limit": 1})["total"]
    assert total >= len(survivors)
    assert not list(d.root.rglob(".tmp-*")), "temp files of the killed daemon are removed"


def test_sigterm_drains_and_exits_cleanly(daemon):
    m = daemon.call("memory_write", {"content": "before shutdown"})
    with daemon.client() as c:
        c.call("memory_read", {"id": m["id"]})  # an access count to flush
        idle = daemon.client()
        assert daemon.stop(signal.SIGTERM) == 0
        idle.close()
    assert not daemon.socket.exists()
    assert "daemon.stopped" in daemon.log
    text = file_of(daemon.root, m, "inbox").read_text()
    assert "access_count: 1" in text, "access counts are flushed at shutdown"


def test_second_instance_is_refused_naming_the_pid(daemon):
    proc = subprocess.run([sys.executable, "-m", "memoryd", "serve", "--root",
                           str(daemon.root)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert f"pid {daemon.proc.pid}" in proc.stderr
    assert daemon.call("health")["pid"] == daemon.proc.pid


def test_stale_socket_and_lock_after_a_crash_do_not_block_restart(make_daemon):
    d = make_daemon().start()
    d.kill()
    assert d.socket.exists() and (d.root / ".daemon.lock").exists()
    d.start()
    assert d.call("health")["status"] == "ok"


def test_hand_edits_additions_and_deletions_are_picked_up(daemon):
    m = daemon.call("memory_write", {"content": "The cat is called Miso", "category": "people"})
    path = file_of(daemon.root, m, "people")
    path.write_text(path.read_text().replace("Miso", "Tofu").replace("custom", "x")
                    + "", encoding="utf-8")
    found = wait_for(lambda: daemon.call("memory_search", {"query": "Tofu"})["memories"],
                     what="the edit to be indexed")
    assert found[0]["id"] == m["id"] and found[0]["version"] == 2
    assert daemon.call("memory_search", {"query": "Miso"})["total"] == 0
    # a file written by hand with no front matter at all
    new = daemon.root / "categories/lessons/rsync.md"
    new.parent.mkdir(exist_ok=True)
    new.write_text("Learned: rsync needs a trailing slash on the source\n")
    hit = wait_for(lambda: daemon.call("memory_search", {"query": "trailing slash"})["memories"],
                   what="the new file")
    assert hit[0]["id"] == "rsync" and hit[0]["category"] == "lessons"
    assert hit[0]["phase"] == "organized"
    assert new.read_text().startswith("---\nid: rsync\n"), "front matter filled in"
    # a partial front matter keeps the user's own keys and fills in the rest
    partial = daemon.root / "categories/inbox/idea.md"
    partial.write_text("---\ntags: [idea]\nmood: hopeful\n---\nBuild a tiny synth\n")
    got = wait_for(lambda: daemon.call("memory_search", {"query": "synth"})["memories"],
                   what="the partial file")
    assert got[0]["tags"] == ["idea"] and got[0]["extra"] == {"mood": "hopeful"}
    assert "mood: hopeful" in partial.read_text()
    path.unlink()
    wait_for(lambda: daemon.call("memory_search", {"query": "Tofu"})["total"] == 0,
             what="the deletion")
    # the daemon's own writes are not mistaken for edits
    own = daemon.call("memory_write", {"content": "own write", "category": "knowledge"})
    # A hand edit after it, picked up: the watcher has handled the own write's events.
    (daemon.root / "categories" / "knowledge" / "marker.md").write_text("a marker note\n")
    wait_for(lambda: daemon.call("memory_search", {"query": "marker"})["total"] == 1,
             what="the marker")
    assert daemon.call("memory_read", {"id": own["id"]})["version"] == 1


def test_edits_made_while_stopped_are_reconciled_at_start(make_daemon):
    d = make_daemon().start()
    keep = d.call("memory_write", {"content": "keeps its place", "category": "knowledge"})
    gone = d.call("memory_write", {"content": "will be removed by hand"})
    assert d.stop() == 0
    file_of(d.root, gone, "inbox").unlink()
    (d.root / "categories/knowledge/offline.md").write_text("written while it slept\n")
    d.start()
    assert d.call("memory_search", {"query": "slept"})["total"] == 1
    assert d.call("memory_search", {"query": "removed"})["total"] == 0
    assert d.call("memory_read", {"id": keep["id"]})["content"] == "keeps its place"


def test_deleted_or_corrupted_index_is_rebuilt_from_the_files(make_daemon):
    d = make_daemon().start()
    ids = [d.call("memory_write", {"content": f"rebuild me {i}"})["id"] for i in range(20)]
    assert d.stop() == 0
    shutil.rmtree(d.root / "index")
    d.start()
    assert d.call("memory_search", {"query": "rebuild"})["total"] == 20
    assert d.stop() == 0
    (d.root / "index/keyword.sqlite").write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(f"{d.root}/index/keyword.sqlite{suffix}").unlink(missing_ok=True)
    d.start()
    assert d.call("memory_read", {"id": ids[7]})["content"] == "rebuild me 7"


def test_a_new_store_embeds_with_int8_an_older_one_keeps_fp32(make_daemon, monkeypatch):
    monkeypatch.delenv(FORCE_VARIANT, raising=False)  # the choice is what is tested
    d = make_daemon().start()
    first = d.call("memory_write", {"content": "the kayak is in the boathouse"})
    assert d.call("stats")["models"]["embedder"]["model"] == INT8_ID
    assert (d.root / "index/embedder").read_text() == "int8\n"
    assert d.stop() == 0
    (d.root / "index/embedder").unlink()  # as a store built before the record was
    d.start()
    assert d.call("stats")["models"]["embedder"]["model"].endswith("/fp32")
    assert (d.root / "index/embedder").read_text() == "fp32\n"
    found = d.call("memory_smart_search", {"query": "where is the kayak"})
    assert [m["id"] for m in found["memories"]] == [first["id"]]


def test_vectors_reach_the_vector_store_in_the_background(make_daemon):
    d = make_daemon().start()
    assert d.call("memory_search", {"query": "lighthouse"})["total"] == 0
    assert '"vectors.opened"' not in d.log  # a new store: nothing in chroma to read
    ids = [d.call("memory_write", {"content": f"the lighthouse keeper's note {i}"})["id"]
           for i in range(5)]
    deadline = time.monotonic() + 60  # the daemon writes them each second; a loaded box
    while (index := d.call("stats")["index"])["unpersisted"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert index["unpersisted"] == 0 and index["in_step"], index
    d.kill()  # no snapshot, no shutdown: only what was persisted survives in index/
    (d.root / "index/corpus.snapshot").unlink(missing_ok=True)
    d.start()
    reconciled = [json.loads(x) for x in d.log.splitlines() if '"index.reconciled"' in x]
    assert reconciled[-1]["vectors_embedded"] == 0, "every vector was in the store"
    found = d.call("memory_smart_search", {"query": "lighthouse keeper"})
    assert {m["id"] for m in found["memories"]} <= set(ids) and found["memories"]

    # A start from the snapshot does not open chroma (importing chromadb is a third of
    # a start), nor do reads; the first write starts its process from a thread of its
    # own, and what is written still lands.
    d.stop()
    before = len(d.log)
    d.start()

    def run_events() -> list[str]:
        return [json.loads(x)["event"] for x in d.log[before:].splitlines()
                if x.startswith("{")]

    assert d.call("memory_smart_search", {"query": "lighthouse keeper"})["memories"]
    assert "index.snapshot.loaded" in run_events()
    assert "vectors.opened" not in run_events()
    ids += [d.call("memory_write", {"content": f"the harbour master's note {i}"})["id"]
            for i in range(3)]
    wait_for(lambda: d.call("stats")["index"]["unpersisted"] == 0, 60, "the new vectors")
    started = [json.loads(x) for x in d.log[before:].splitlines()
               if '"vectors.process_started"' in x]
    assert [e["thread"] for e in started] == ["vectors-open"]
    assert run_events().count("vectors.opened") == 1  # in that process
    d.kill()
    (d.root / "index/corpus.snapshot").unlink(missing_ok=True)
    d.start()
    reconciled = [json.loads(x) for x in d.log.splitlines() if '"index.reconciled"' in x]
    assert reconciled[-1]["vectors_embedded"] == 0, "every vector was in the store"


def test_a_writes_texts_are_embedded_by_a_model_process_of_its_own(make_daemon):
    """The model process (models/apart.py): a child of the daemon, in the kernel's idle
    class on Linux, making the vectors of what is written; it ends with the daemon."""
    d = make_daemon().start()
    written: list[str] = []

    def running() -> dict | None:
        n = len(written)
        written.append(d.call("memory_write", {
            "content": f"the ferry to the island leaves from pier {n} at dawn"})["id"])
        apart = d.call("stats")["models"]["embedder"]["apart"]
        return apart if apart["state"] == "on" and apart["calls"] else None

    apart = wait_for(running, 120, "a write's texts embedded by the model process")
    pid = apart["pid"]
    stat = Path(f"/proc/{pid}/stat").read_text() if sys.platform == "linux" else ""
    if stat:
        assert int(stat.rsplit(")", 1)[1].split()[1]) == d.proc.pid, "the daemon's child"
        assert os.sched_getscheduler(pid) == os.SCHED_IDLE
        assert d.call("stats")["memory"]["model_process_mb"] > 0, "its share is named"
    found = d.call("memory_smart_search", {"query": "when does the island ferry leave"})
    assert found["memories"] and {m["id"] for m in found["memories"]} <= set(written)
    d.stop()
    wait_for(lambda: not Path(f"/proc/{pid}").exists(), 30, "the model process to end")


def test_bad_config_fails_at_start_naming_the_key(short_tmp):
    root = short_tmp / "cfg"
    root.mkdir()
    for text, key in (("storage:\n  inbox_ttl: soon\n", "storage.inbox_ttl"),
                      ("server:\n  max_conections: 3\n", "max_conections"),
                      ("logging: [1, 2]\n", "logging"),
                      ("a: b: c\n", "YAML")):
        (root / "config.yaml").write_text(text)
        proc = subprocess.run([sys.executable, "-m", "memoryd", "serve", "--root", str(root)],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert key in proc.stderr
        assert "Traceback" not in proc.stderr


def test_root_and_socket_permissions(short_tmp):
    root = short_tmp / "fresh" / "deeper"
    env = dict(os.environ, MEMORY_HOME=str(root))
    proc = subprocess.Popen([sys.executable, "-m", "memoryd", "serve"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: (root / "memory.sock").exists(), 30, "the socket")
        assert (root.stat().st_mode & 0o777) == 0o700
        assert ((root / "memory.sock").stat().st_mode & 0o777) == 0o600
        with Client(root / "memory.sock") as c:
            assert c.call("health")["root"] == str(root)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0


def test_a_file_renamed_by_hand_keeps_its_id(daemon):
    m = daemon.call("memory_write", {"content": "renamed by hand", "category": "knowledge"})
    src = file_of(daemon.root, m, "knowledge")
    src.rename(daemon.root / "categories/lessons/a-better-name.md")
    def category() -> str | None:  # one call: the rename is two events, two commits
        found = daemon.call("memory_search", {"query": "renamed"})["memories"]
        return found[0]["category"] if found else None

    wait_for(lambda: category() == "lessons", what="the rename")
    got = daemon.call("memory_read", {"id": m["id"]})
    assert got["category"] == "lessons" and got["content"] == "renamed by hand"
    assert daemon.call("memory_list", {})["total"] == 1


def test_connections_from_another_user_are_refused(daemon):
    mode = daemon.socket.stat().st_mode & 0o777
    assert mode == 0o600, "other users cannot even open the socket"
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return  # checking SO_PEERCRED as well needs root to act as another user
    os.chmod(daemon.socket, 0o666)
    os.chmod(daemon.root, 0o755)
    os.chmod(daemon.root.parent, 0o755)
    # the refusal is sent as soon as the connection is accepted
    code = ("import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
            "print(s.recv(4096).decode())")
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           sys.executable, "-c", code, str(daemon.socket)],
                          capture_output=True, text=True, timeout=30)
    assert '"code":-32003' in proc.stdout, proc.stdout + proc.stderr
    assert "another user" in proc.stdout
    assert daemon.call("health")["status"] == "ok"


def test_folders_moved_in_and_out_by_hand(daemon):
    outside = daemon.root.parent / "elsewhere"
    (outside / "turns").mkdir(parents=True)
    (outside / "turns" / "20240101T000000000000Z__t1.md").write_text(
        "Bob: the folder moved in with its turn\n")
    target = daemon.root / "sessions" / "chat-7"
    outside.rename(target)
    hit = wait_for(lambda: daemon.call("memory_search", {"query": "moved in"})["memories"],
                   what="the moved-in folder")
    assert hit[0]["session"] == "chat-7" and hit[0]["kind"] == "turn"
    target.rename(daemon.root.parent / "gone-again")
    wait_for(lambda: daemon.call("memory_search", {"query": "moved in"})["total"] == 0,
             what="the moved-out folder")


def test_sigterm_during_a_long_start_up(make_daemon):
    d = make_daemon()
    notes = d.root / "categories" / "knowledge"
    notes.mkdir(parents=True)
    for i in range(500):  # written by hand while no daemon ran: all need embedding
        (notes / f"n{i}.md").write_text(f"hand-written note number {i} about topic {i % 97}\n")
    d.start(wait=False)
    deadline = time.monotonic() + 60
    while "index.embedding" not in d.log:
        assert time.monotonic() < deadline, d.log
        time.sleep(0.05)
    t0 = time.monotonic()
    assert d.stop(signal.SIGTERM, timeout=30) == 0
    assert time.monotonic() - t0 < 10, "stopped without finishing the re-embedding"
    assert "daemon.stopped" in d.log
    d.start()  # the next start finishes the job
    assert d.call("memory_search", {"query": "number 499"})["total"] == 1
    found = d.call("memory_smart_search", {"query": "note number 434 topic"})
    assert found["memories"]
    assert d.stop() == 0  # (a kill would leave its first git commit writing objects)
