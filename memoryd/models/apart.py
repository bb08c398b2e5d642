"""ApartModel: the embedding model in a process of its own, in the kernel's idle class,
for the model calls no caller waits on yet (a write's texts embedded ahead of its commit).

Why a process: on a machine with few cores, a search under a stream of writes waits
for a core, not for a lock (`bench/write_search.py`): the writes' model calls, even at
nice 10, keep a woken search thread waiting for their slice. A thread in the idle class
(SCHED_IDLE) gives up its core the moment another thread wants it, but in the daemon's
process such a thread can be stopped while it holds Python's GIL, and then every thread
waits for as long as the machine stays busy. A process of its own holds nothing the
daemon needs.

Its vectors must be the daemon's own, bit for bit (a text's vector depends on its text
alone): at each start the child embeds the batch probe (models/batch_check.py), and it
is used only if every vector equals the daemon's. A commit waits for it while it keeps
answering, LATE at most; one that answered nothing for STALLED while calls wait gets no
core (the machine is busy with other programs), and the daemon makes the texts itself
at once (embedder.py).

The child is `python -m memoryd.models.apart FD MODEL VARIANT THREADS WORKERS LEVEL
FORMAT`: one end of a socket pair only the two hold, pickled token ids in and vectors
out, answered in order, WORKERS calls made side by side (as the daemon's own pool makes
them: under a bulk write the model is the bottleneck, and one call at a time left a core
to the daemon's main thread alone). It starts when writes come as a stream (START_AFTER
model calls within `idle` seconds; until it is ready the daemon's own threads take
them), and ends after `idle` seconds without one, when the daemon closes it, or when
the daemon dies (it reads the end of its socket).
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from memoryd import allocator, priority
from memoryd import log as logging_setup

log = structlog.get_logger("memoryd.embedder")

Run = Callable[[list[list[int]]], np.ndarray]  # one model call: token ids -> vectors

IDLE = 20.0  # seconds without a model call before the child ends
START_WAIT = 120.0  # seconds a child may take to load the model on a busy machine
STOP_WAIT = 10.0  # seconds `close` waits for the threads that speak to the child
START_AFTER = 32  # model calls within IDLE seconds that start a child
# A child that answered nothing for this long while calls wait gets no core (under a
# stream of writes and searches it answers every few ms): commits stop waiting for it,
# and new calls go to the daemon's threads for REST seconds (each call offered to a
# starved child costs its commit STALLED).
STALLED = 0.25
REST = 5.0  # seconds after a stall before calls are offered to the child again
# Model calls queued in the child at most: past it, calls go to the daemon's threads.
MOST_QUEUED = 64
MOST_LOST = 3  # children that ended unasked before none is started again


class ModelLost(RuntimeError):
    """The model process ended, or failed a call."""


class ApartModel:
    def __init__(self, model: Path, variant: str, threads: int, reference: Run,
                 probe: list[list[list[int]]], idle: float = IDLE, workers: int = 1) -> None:
        self.model, self.variant, self.threads = model, variant, threads
        self.workers = max(1, workers)
        self.reference = reference  # the daemon's own model calls, to check the child's
        self.probe = probe  # model calls whose vectors the child must match
        self.idle = idle
        self.state = "off"  # off, starting, on, refused, closed
        self.why = ""  # why it was refused
        self.calls = self.declined = self.starts = self.lost = 0
        self._lock = threading.Lock()
        self._sending = threading.Lock()  # keeps requests in the order of `_pending`
        self._pending: deque[Future[np.ndarray]] = deque()
        self._conn: Connection | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._starting: subprocess.Popen[bytes] | None = None  # before its hello
        self._threads: list[threading.Thread] = []  # the start's and the reader's
        self._offered: deque[float] = deque(maxlen=START_AFTER)  # calls while none ran
        self._last = time.monotonic()
        # The last answer, or when a call came to an empty queue: how long the child
        # has made no progress on what waits for it.
        self._moved = self._last
        self._resting_until = 0.0  # after a stall, calls go to the daemon's threads

    def stalled(self) -> bool:
        """Calls wait in the child and it has answered none for STALLED seconds: it
        gets no core (the machine is busy with other programs)."""
        with self._lock:
            return self._stalled()

    def _stalled(self) -> bool:
        now = time.monotonic()
        if self._pending and now - self._moved >= STALLED:
            self._resting_until = now + REST
            return True
        return False

    def describe(self) -> dict[str, Any]:
        with self._lock:
            return {"state": self.state, "pid": self._proc.pid if self._proc else None,
                    "calls": self.calls, "declined": self.declined, "starts": self.starts,
                    "lost": self.lost,
                    **({"why": self.why} if self.why else {})}

    def submit(self, ids: list[list[int]]) -> Future[np.ndarray] | None:
        """The vectors of one model call, made by the child; None when it cannot take
        the call now (not running, MOST_QUEUED behind, or starved): the caller makes
        it."""
        with self._sending:
            with self._lock:
                if self.state == "off" and self._a_stream():
                    self.state = "starting"
                    self._spawn(self._start, "embed-apart-start")
                if self.state != "on":
                    return None
                if len(self._pending) >= MOST_QUEUED or self._stalled() or \
                        time.monotonic() < self._resting_until:
                    self.declined += 1  # the daemon's threads make it meanwhile
                    return None
                conn = self._conn
                assert conn is not None
                made: Future[np.ndarray] = Future()
                self._last = time.monotonic()
                if not self._pending:
                    self._moved = self._last
                self._pending.append(made)
                self.calls += 1
            with contextlib.suppress(OSError):  # it ended: the reader fails what is pending
                conn.send(ids)
            return made

    def _a_stream(self) -> bool:
        """Calls come as a stream (START_AFTER within IDLE seconds): worth a process.
        A lone write's few calls are made by the daemon's threads, as they would be
        while the process loads (about a second of CPU and 130 MB, for nothing)."""
        now = time.monotonic()
        self._offered.append(now)
        while self._offered and now - self._offered[0] > self.idle:
            self._offered.popleft()
        return len(self._offered) >= START_AFTER

    def _spawn(self, target: Callable[..., None], name: str, *args: Any) -> None:
        """Start a thread that speaks to the child (under `_lock`: `close` joins them)."""
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def close(self) -> None:
        """End the child, one still starting too, and wait for the threads that speak
        to it (none is left to log while the interpreter ends); nothing is offered to
        it again."""
        with self._lock:
            self.state, conn, starting = "closed", self._conn, self._starting
            threads = list(self._threads)
        if starting is not None:
            starting.kill()  # before its hello: it holds nothing of ours
        if conn is not None:
            try:  # its reader wakes to the end (and closes it), so does the child
                with socket.socket(fileno=os.dup(conn.fileno())) as ours:
                    ours.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # closed already
        for thread in threads:
            thread.join(STOP_WAIT)

    # -- the child's life -------------------------------------------------------------
    def _start(self) -> None:
        priority.background_priority()  # the probe's reference calls are background work
        ours, theirs = socket.socketpair()
        conn = Connection(ours.detach())
        proc: subprocess.Popen[bytes] | None = None
        try:
            with theirs:
                # one thread for numpy's libraries too: each call has a thread of its own
                env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
                with self._lock:
                    if self.state != "starting":
                        raise ModelLost("closed before it started")
                    proc = self._starting = subprocess.Popen(
                        [sys.executable, "-m", __name__, str(theirs.fileno()),
                         str(self.model), self.variant, str(self.threads),
                         str(self.workers), *logging_setup.configured()],
                        pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL, env=env)
            started = time.monotonic()
            if not conn.poll(START_WAIT):
                raise ModelLost(f"the model process was not ready in {START_WAIT:.0f} s")
            conn.recv()  # its hello, once the model is loaded
            differs = self._differs(conn)
        except (EOFError, OSError, ModelLost) as exc:
            # not retried: the daemon's own threads make every call, as without it
            self._ended(conn, proc, "refused", f"it did not start: {exc}")
            if self.state != "closed":
                log.error("embedder.apart_failed", why=self.why)
            return
        finally:
            with self._lock:
                self._starting = None
        if differs:
            self._ended(conn, proc, "refused", differs)
            log.warning("embedder.apart_refused", why=differs)
            return
        with self._lock:
            if self.state != "starting":  # closed meanwhile
                closed = True
            else:
                closed, self.state, self._conn, self._proc = False, "on", conn, proc
                self.starts += 1
                self._last = time.monotonic()
                self._spawn(self._read, "embed-apart", conn, proc)
        if closed:
            self._ended(conn, proc, "closed", "")
            return
        log.info("embedder.apart_started", pid=proc.pid,
                 seconds=round(time.monotonic() - started, 3))

    def _differs(self, conn: Connection) -> str:
        """Why the child's vectors of the probe are not the daemon's ("" when they are,
        bit for bit)."""
        for call in self.probe:
            conn.send(call)
            if not conn.poll(START_WAIT):
                raise ModelLost("the model process did not answer the probe")
            status, got = conn.recv()
            if status != "ok":
                raise ModelLost(str(got))
            want = self.reference(call)
            if not np.array_equal(got, want):
                worst = float(np.max(np.abs(got - want)))
                return (f"its vectors of the probe differ from the daemon's (by up to "
                        f"{worst:.2g}): every model call stays in the daemon")
        return ""

    def _read(self, conn: Connection, proc: subprocess.Popen[bytes]) -> None:
        """Hand each answer to its call, in order; end the child after `idle` quiet."""
        while True:
            try:
                if not conn.poll(min(self.idle, 1.0)):
                    with self._lock:
                        quiet = not self._pending and \
                            time.monotonic() - self._last >= self.idle
                        if quiet and self.state == "on":
                            self.state = "off"
                    if quiet:
                        self._ended(conn, proc, "", "")
                        log.info("embedder.apart_released", idle_s=self.idle)
                        return
                    continue
                status, value = conn.recv()
            except (EOFError, OSError):
                with self._lock:
                    lost = self.state == "on"
                    if lost:
                        self.lost += 1
                        self.state = "off" if self.lost < MOST_LOST else "refused"
                self._ended(conn, proc, "", "")
                if lost:
                    log.error("embedder.apart_lost", pid=proc.pid, returncode=proc.returncode,
                              again=self.state == "off")
                return
            with self._lock:
                made = self._pending.popleft()
                self._moved = time.monotonic()
            if status == "ok":
                made.set_result(value)
            else:
                made.set_exception(ModelLost(str(value)))

    def _ended(self, conn: Connection, proc: subprocess.Popen[bytes] | None, state: str,
               why: str) -> None:
        """The child closed and waited for; every call still pending fails (its texts
        are made by the daemon); `state` set unless empty or the model was closed."""
        with self._sending:  # (a send under way fails at once: the child has ended)
            conn.close()
        if proc is not None:
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        with self._lock:
            if self._conn is conn:
                self._conn, self._proc = None, None
            pending, self._pending = list(self._pending), deque()
            if state and self.state != "closed":
                self.state, self.why = state, why
        for made in pending:
            made.set_exception(ModelLost("the model process ended"))


# -- the child ------------------------------------------------------------------------------
def serve(conn: Connection, run: Run, workers: int = 1) -> None:
    """Answer model calls in order until the daemon's end of the socket closes,
    `workers` of them made side by side."""
    conn.send(("ready", None))
    pool = ThreadPoolExecutor(workers, thread_name_prefix="embed")
    answers: queue.SimpleQueue[Future[np.ndarray] | None] = queue.SimpleQueue()
    sender = threading.Thread(target=_send_in_order, args=(conn, answers), daemon=True)
    sender.start()
    while True:
        try:
            ids = conn.recv()
        except (EOFError, OSError):
            break
        answers.put(pool.submit(run, ids))
    answers.put(None)  # the daemon is gone: nothing made now is read


def _send_in_order(conn: Connection, answers: queue.SimpleQueue[Future[np.ndarray] | None]
                   ) -> None:
    trim = allocator.Periodic()
    while (made := answers.get()) is not None:
        try:
            reply: tuple[str, Any] = ("ok", made.result())
        except Exception as exc:  # told to the daemon, which makes the call itself
            reply = ("error", f"{type(exc).__name__}: {exc}")
        try:
            conn.send(reply)
        except (EOFError, OSError):
            return
        trim.tick()


def main(argv: list[str]) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)  # the daemon ends it, with the terminal's group
    fd, model, variant, threads, workers, level, fmt = argv
    logging_setup.configure(level, fmt)
    allocator.tune()
    # Loaded at nice 10 (a start in the idle class, on a busy machine, took seconds
    # while every call went to the daemon's threads), then every thread in the class.
    priority.background_process()
    from memoryd.models.embedder import model_session, vectors

    session = model_session(Path(model), variant, int(threads))
    priority.idle_process()
    # the threads that make calls, started after this, are in the idle class too
    serve(Connection(int(fd)), lambda ids: vectors(session, ids), int(workers))
    os._exit(0)  # nothing to write: an interpreter's teardown is time for nothing


if __name__ == "__main__":
    main(sys.argv[1:])
