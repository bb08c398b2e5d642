"""A full disk: every change either completes or is rolled back whole, and the client is
told -32006 with the cause. The failure is injected where the kernel or SQLite would
raise it (a write of the file's bytes; the catalog's transaction)."""

from __future__ import annotations

import errno
import json
import sqlite3

import memoryd.store.files as files_module
from memoryd.protocol.dispatch import Connection
from memoryd.store.files import TMP_PREFIX


def full_disk_writes(monkeypatch) -> None:
    def write(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files_module.os, "write", write)


def full_disk_catalog(monkeypatch, engine, method: str) -> None:
    def fail(*args, **kwargs):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(engine.catalog.writer, method, fail)


def files_of(root) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*.md")
            if p.is_file()}


def temp_files(root) -> list:
    return [p for p in root.rglob(f"{TMP_PREFIX}*")]


async def test_a_write_on_a_full_disk_is_refused_and_nothing_is_stored(rig, monkeypatch):
    engine = rig.engine
    full_disk_writes(monkeypatch)
    reply = await rig.call("memory_write", content="never stored")
    assert reply["error"]["code"] == -32006 and "disk is full" in reply["error"]["message"]
    monkeypatch.undo()
    assert (await rig.call("memory_list"))["result"]["total"] == 0
    assert files_of(engine.root) == {} and temp_files(engine.root) == []


async def test_a_pipelined_batch_on_a_full_disk_fails_as_one(rig, monkeypatch):
    full_disk_writes(monkeypatch)
    lines = [json.dumps({"id": i, "method": "memory_write",
                         "params": {"content": f"batch {i}"}}).encode() for i in range(4)]
    replies = [json.loads(r) for r in await rig.dispatcher.handle_many(lines, Connection())]
    assert [r["error"]["code"] for r in replies] == [-32006] * 4
    monkeypatch.undo()
    assert (await rig.call("memory_list"))["result"]["total"] == 0


async def test_a_delete_whose_index_update_fails_puts_the_file_back(rig, monkeypatch):
    engine = rig.engine
    m = (await rig.call("memory_write", content="keep me", category="knowledge"))["result"]
    before = files_of(engine.root)
    full_disk_catalog(monkeypatch, engine, "delete")
    reply = await rig.call("memory_delete", id=m["id"])
    assert reply["error"]["code"] == -32006
    monkeypatch.undo()
    assert files_of(engine.root) == before, "the file is back where it was, unchanged"
    assert (await rig.call("memory_read", id=m["id"]))["result"]["content"] == "keep me"
    tagged = await rig.call("memory_tag", id=m["id"], add=["still-here"])
    assert tagged["result"]["tags"] == ["still-here"]
    assert temp_files(engine.root) == []


async def test_an_update_whose_index_update_fails_keeps_the_old_file(rig, monkeypatch):
    engine = rig.engine
    m = (await rig.call("memory_write", content="version one"))["result"]
    before = files_of(engine.root)
    full_disk_catalog(monkeypatch, engine, "upsert")
    reply = await rig.call("memory_update", id=m["id"], content="version two",
                       category="knowledge")
    assert reply["error"]["code"] == -32006
    monkeypatch.undo()
    assert files_of(engine.root) == before, "old text, old folder"
    got = (await rig.call("memory_read", id=m["id"]))["result"]
    assert (got["content"], got["version"], got["category"]) == ("version one", 1, "inbox")
    assert temp_files(engine.root) == []
    assert (await rig.call("memory_update", id=m["id"], content="version two")
            )["result"]["version"] == 2


async def test_without_hard_links_a_failed_update_still_restores_the_old_file(rig, monkeypatch):
    """Some file systems (FUSE, FAT) refuse hard links: the backup is kept in memory."""
    engine = rig.engine
    m = (await rig.call("memory_write", content="old words"))["result"]
    before = files_of(engine.root)

    def no_links(src, dst):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(engine.files, "link", no_links)
    full_disk_catalog(monkeypatch, engine, "upsert")
    assert (await rig.call("memory_update", id=m["id"], content="new words")
            )["error"]["code"] == -32006
    monkeypatch.undo()
    assert files_of(engine.root) == before and temp_files(engine.root) == []
