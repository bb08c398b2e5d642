"""ApartVectors: the embedded chroma store (retrieval/vectors.py ChromaVectors) in a
process of its own, behind the same port (ports.VectorStore).

Why a process: chromadb's bindings hold Python's GIL for the whole of each call — an
upsert's HNSW insert and its SQLite commit, 25-180 ms — so in the daemon's process
every thread stopped while the writer persisted vectors: a search, the event loop
reading the next request (`bench/write_search.py`: smart search p99 80-107 ms with a
writer beside it). And what chroma holds (its import, its HNSW indexes, what its
allocator keeps after a close) stayed in the daemon for good; a process that ends
gives all of it back (`bench/write_rss.py`).

The child is `python -m memoryd.retrieval.vectors_apart FD PATH LEVEL FORMAT`: one end of a
socket pair only the two hold, pickled requests and answers (both sides are this
package's code, of one user), one request at a time. It starts at the first write
(`warm`) or use, and ends when the daemon releases it after a quiet spell
(`release`), closes it, or dies (the child reads the end of its socket and stops; it
ignores SIGINT and SIGTERM, which a terminal or a service manager sends the whole
group, so a chroma write is never cut in the middle). A child that ends unasked fails
the call under way (its vectors stay pending) and the next call starts another.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from memoryd import allocator, priority
from memoryd import log as logging_setup
from memoryd.retrieval.vectors import ChromaVectors, ids_on_disk

log = structlog.get_logger("memoryd.vectors")

STOP_WAIT = 60.0  # seconds a child may take to close chroma before it is killed
# What a request may ask of the child's ChromaVectors: nothing else is called.
_CALLS = frozenset({"upsert", "delete", "collection_ids", "migrate", "scan_start",
                    "scan_next", "close"})


class VectorsLost(RuntimeError):
    """The vector process ended while a call waited for it."""


@dataclass
class _Child:
    proc: subprocess.Popen[bytes]
    conn: Connection


class ApartVectors:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.set_aside: Path | None = None  # where the child set an unreadable store
        self._child: Future[_Child] = Future()
        self._opening = threading.Lock()  # held to start or stop the child
        self._started = False
        self._asking = threading.Lock()  # one request and its answer at a time
        self._starting: subprocess.Popen[bytes] | None = None  # before its hello
        self.last_used = time.monotonic()

    # -- the child's life ---------------------------------------------------------------
    def _claim(self) -> bool:
        with self._opening:
            claimed, self._started = not self._started, True
            return claimed

    def warm(self) -> None:
        """Start the child on a thread of its own, if none is running or starting."""
        if self._claim():
            threading.Thread(target=self._open, args=(self._child,), name="vectors-open",
                             daemon=True).start()

    def _open(self, child: Future[_Child]) -> None:
        started = time.monotonic()
        ours, theirs = socket.socketpair()
        conn = Connection(ours.detach())
        proc: subprocess.Popen[bytes] | None = None
        try:
            with theirs, self._opening:  # `close` kills it, or it is not started
                if child is not self._child:
                    raise VectorsLost("the vector store was closed before it started")
                proc = subprocess.Popen(
                    [sys.executable, "-m", __name__, str(theirs.fileno()), str(self.path),
                     *logging_setup.configured()],
                    pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL)
                self._starting = proc
            try:
                status, value = conn.recv()  # the child's hello, once chroma is open
            except EOFError:
                raise VectorsLost("the vector process ended before it was ready (its "
                                  "error is on the daemon's stderr)") from None
            finally:
                with self._opening:
                    self._starting = None
            if status != "ready":
                raise value
            self.set_aside = self.set_aside or value
            child.set_result(_Child(proc, conn))
            log.info("vectors.process_started", pid=proc.pid,
                     seconds=round(time.monotonic() - started, 3),
                     thread=threading.current_thread().name)
        except BaseException as exc:  # each call that needs the child raises it
            conn.close()
            if proc is not None:
                _end(proc)
            if child is self._child:
                log.error("vectors.process_failed", error=str(exc)[:300])
            else:  # `close` ended it while it started
                log.info("vectors.start_abandoned", pid=proc.pid if proc else None)
            child.set_exception(exc if isinstance(exc, Exception)
                                else VectorsLost("the vector process did not start"))

    def _running(self) -> _Child:
        self.last_used = time.monotonic()
        if self._claim():
            self._open(self._child)
        return self._child.result()

    @property
    def pid(self) -> int | None:
        """The running child's process id; None while none runs."""
        child = self._child
        if not child.done() or child.exception() is not None:
            return None
        return child.result().proc.pid

    @property
    def ready(self) -> bool:
        """The child is running (or failed to start): using it now does not wait."""
        return self._child.done()

    def unused_for(self) -> float | None:
        return time.monotonic() - self.last_used if self._child.done() else None

    def release(self, idle: float) -> bool:
        """Stop the child when nothing used it for `idle` seconds: all it held goes back
        to the system; the next use starts another. Whether it did."""
        with self._opening:
            if not (self._started and self._child.done()):
                return False
            if time.monotonic() - self.last_used < idle:
                return False
            child, self._child, self._started = self._child, Future(), False
        self._stop(child)
        log.info("vectors.released", idle_s=round(idle, 1))
        return True

    def close(self) -> None:
        """Close the child; one still starting is killed, not waited for: before its
        hello nothing of ours is in its store, and chroma's own start-up writes are
        SQLite transactions (a stop then takes no second for chroma's import)."""
        with self._opening:
            if not self._started:
                return
            child, self._child, self._started = self._child, Future(), False
            starting = self._starting
        if starting is not None:
            starting.kill()
        self._stop(child)

    def _stop(self, child: Future[_Child]) -> None:
        if child.exception() is not None:  # (waits for a start under way)
            return
        running = child.result()
        with self._asking:
            try:
                running.conn.send(("close", ()))
                running.conn.recv()
            except (EOFError, OSError):
                pass  # it had ended: nothing to close
            running.conn.close()
        _end(running.proc)

    def _lost(self, child: Future[_Child], running: _Child) -> None:
        """The child ended unasked: forget it (the next call starts another)."""
        with self._opening:
            if self._child is child:
                self._child, self._started = Future(), False
        running.conn.close()
        running.proc.kill()  # (nothing, if it has ended)
        log.error("vectors.process_lost", pid=running.proc.pid,
                  returncode=running.proc.wait())

    def _call(self, method: str, *args: Any) -> Any:
        running = self._running()
        child = self._child
        with self._asking:
            try:
                running.conn.send((method, args))
                status, value = running.conn.recv()
            except (EOFError, OSError) as exc:
                self._lost(child, running)
                raise VectorsLost(f"the vector process ended during {method}") from exc
        if status == "error":
            raise value
        return value

    # -- the port -------------------------------------------------------------------------
    def upsert(self, kind: str, scope: str, ids: list[str], vectors: np.ndarray,
               hashes: list[str], model: str) -> None:
        self._call("upsert", kind, scope, ids, vectors, hashes, model)

    def delete(self, scope: str, ids: list[str], kinds: tuple[str, ...] = ("own", "ctx")
               ) -> None:
        self._call("delete", scope, ids, kinds)

    def _stored_ids(self) -> list[str] | None:
        """The collection ids in the store's SQLite file while no child runs (a start
        that only checks the snapshot starts none); None: the child is to be asked."""
        return None if self.ready else ids_on_disk(self.path)

    def collection_ids(self) -> list[str]:
        stored = self._stored_ids()
        return stored if stored is not None else list(self._call("collection_ids"))

    def scan(self, model: str) -> Iterator[tuple[str, str, list[str], np.ndarray, list[str]]]:
        """As ChromaVectors.scan, a batch an answer: the child holds the scan, so a
        caller may write between batches."""
        if self._stored_ids() == []:
            return
        self._call("scan_start", model)
        while (batch := self._call("scan_next")) is not None:
            yield batch

    def migrate(self, model: str | None) -> int:
        if self._stored_ids() == []:
            return 0
        return int(self._call("migrate", model))


def _end(proc: subprocess.Popen[bytes]) -> None:
    """Wait for a child that was told to close (or has nothing to close), then kill it
    if it takes more than STOP_WAIT."""
    try:
        proc.wait(STOP_WAIT)
    except subprocess.TimeoutExpired:
        log.error("vectors.process_killed", pid=proc.pid)
        proc.kill()
        proc.wait()


# -- the child ------------------------------------------------------------------------------
def serve(conn: Connection, path: Path) -> None:
    """Answer requests with a ChromaVectors at `path` until asked to close or the daemon's
    end of the socket closes."""
    vectors = ChromaVectors(path)
    try:
        vectors.client.heartbeat()  # open now: the daemon waits for this, not a write
    except Exception as exc:  # told to the daemon, which raises it
        conn.send(("failed", _sendable(exc)))
        return
    conn.send(("ready", vectors.set_aside))
    scanning: Iterator[Any] | None = None
    trim = allocator.Periodic()  # upserts that never pause: chroma's freed pages given back
    while True:
        try:
            method, args = conn.recv()
        except (EOFError, OSError):
            break  # the daemon is gone
        if method not in _CALLS:
            conn.send(("error", ValueError(f"no such vector call: {method!r}")))
            continue
        try:
            if method == "close":
                vectors.close()
                conn.send(("ok", None))
                return
            if method == "scan_start":
                scanning, value = vectors.scan(*args), None
            elif method == "scan_next":
                value = next(scanning, None) if scanning is not None else None
            else:
                value = getattr(vectors, method)(*args)
                if method == "upsert":
                    trim.tick()
            conn.send(("ok", value))
        except Exception as exc:  # each is the daemon's to raise
            conn.send(("error", _sendable(exc)))
    vectors.close()


def _sendable(exc: Exception) -> Exception:
    """`exc` if it survives pickling (chroma's errors do), else its type and words."""
    import pickle

    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def main(argv: list[str]) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)  # the daemon ends it: never mid-write
    fd, path, level, fmt = argv
    logging_setup.configure(level, fmt)
    allocator.tune()  # chroma's batches given back when freed, as in the daemon
    # Everything it does is background work (the writes' vectors, persisted after
    # their acknowledgement): a search's thread in the daemon gets the cores first.
    # Before chroma starts its threads (each inherits it); a pool a library started at
    # its import is lowered too.
    priority.background_process()
    serve(Connection(int(fd)), Path(path))
    # chroma is closed: nothing is left to write, and an interpreter's teardown of all
    # chromadb loaded is time the daemon's stop would wait for
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
