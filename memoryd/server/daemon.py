"""The daemon's lifecycle: open the stores, reconcile, serve, drain, exit.

One nursery owns the listener, every connection, the watcher and the stats
flusher. SIGTERM/SIGINT stop accepting (the socket file goes at once), close
idle connections, let busy ones finish what they received (up to
`server.drain_timeout`), flush access counts and exit 0.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import structlog
import trio

from memoryd.config import Config
from memoryd.engine import Engine
from memoryd.errors import Busy, BusyReason, Forbidden
from memoryd.history.git import GitHistory
from memoryd.jobs.scheduler import Scheduler
from memoryd.protocol.codec import encode_error
from memoryd.protocol.dispatch import Connection, Dispatcher
from memoryd.server.app import App
from memoryd.server.connection import Drain, serve_connection
from memoryd.server.listener import (
    accept_forever,
    check_socket_path,
    open_unix_listener,
    peer_credentials,
    socket_identity,
)
from memoryd.server.systemd import sd_notify, watchdog_interval
from memoryd.server.watcher import watch_files
from memoryd.server.wiring import build_dispatcher, build_engine
from memoryd.store.walk import ChildWalk

SNAPSHOT_CHECK = 30.0  # seconds between checks whether a snapshot is due
PERSIST_EVERY = 1.0  # seconds between writes of new vectors to the vector store
# Seconds without a vector written before the vector store's indexes are closed (a
# write burst's memory returned): long enough that a steady trickle of writes keeps
# it open, short enough that RSS is back within a minute of the last write.
RELEASE_AFTER = 20.0
START_REPORT = 10.0  # seconds between start-up progress reports to systemd
log = structlog.get_logger("memoryd")


async def _refuse(stream: trio.SocketStream, error: Exception) -> None:
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        with trio.move_on_after(1):
            # The refusal names no request: JSON-RPC's null id (typed as a request's id).
            await stream.send_all(encode_error(None, error))  # type: ignore[arg-type]
    await stream.aclose()


async def _accept(listener: trio.SocketListener, app: App, dispatcher: Dispatcher,
                  drain: Drain, nursery: trio.Nursery) -> None:
    my_uid = os.geteuid()

    async def handle(stream: trio.SocketStream) -> None:
        creds = peer_credentials(stream)
        if creds is not None and creds[1] != my_uid:
            log.warning("connection.refused", reason="other uid", uid=creds[1])
            await _refuse(stream, Forbidden("connections from another user are refused"))
            return
        if app.connections >= app.config.server.max_connections:
            await _refuse(stream, Busy(f"too many connections "
                                       f"({app.config.server.max_connections}); retry later",
                                       {"reason": BusyReason.TOO_MANY_CONNECTIONS}))
            return
        app.connections += 1
        try:
            await serve_connection(stream, dispatcher, Connection(creds[0] if creds else None),
                                   app.engine.unsubscribe, drain, app.config.server.idle_timeout)
        except Exception:  # one connection's failure must never reach the others
            log.exception("connection.failed")
        finally:
            app.connections -= 1

    await accept_forever(listener, handle, nursery)


async def keep_watching(engine: Engine, quiet_period: float, stop: trio.Event,
                         started: trio.Event) -> None:
    """Hand-edit watching that never takes the daemon down: on failure, log and retry.
    Each time the watches are up, and start-up has ended, the files changed while
    nobody watched are caught up on (FileSync.catch_up)."""
    delay = 1.0
    async with trio.open_nursery() as catching:

        async def catch_up() -> None:
            await started.wait()
            try:
                result = await engine.sync.catch_up()
                if result["files_read"] or result["deleted"]:
                    log.info("watcher.caught_up", **{k: v for k, v in result.items() if v})
            except Exception:
                log.exception("index.reconcile_failed")

        while True:
            try:
                await watch_files(engine, quiet_period, stop,
                                  lambda: catching.start_soon(catch_up))
                catching.cancel_scope.cancel()
                return  # stop was set: shutting down
            except Exception:
                log.exception("watcher.failed", retry_in_s=delay)
            await trio.sleep(delay)
            delay = min(delay * 2, 300.0)


async def _flush_stats_every(engine: Engine, interval: float) -> None:
    while True:
        await trio.sleep(interval)
        try:
            await engine.flush_stats()
        except Exception:
            log.exception("stats.flush_failed")


async def _save_snapshot(engine: Engine, stopping: bool = False) -> None:
    """The snapshot is derived: a failure to save it is logged, never fatal."""
    try:
        await engine.save_snapshot(stopping)
    except Exception:
        log.exception("index.snapshot.failed")


async def _snapshot_when_due(engine: Engine) -> None:
    """Save the corpus snapshot once enough changed (retrieval/snapshots.py EVERY_*)."""
    while True:
        await trio.sleep(SNAPSHOT_CHECK)
        if engine.snapshot_due():
            await _save_snapshot(engine)


async def _persist_vectors(engine: Engine) -> None:
    """Write the new memories' vectors to the vector store in batches (a write's
    acknowledgement does not wait for chroma; HybridIndex.persist_deferred), and close
    the store's in-memory indexes once writes have stopped for RELEASE_AFTER."""
    while True:
        await trio.sleep(PERSIST_EVERY)
        try:
            await engine.persist_vectors()
            await engine.release_idle(RELEASE_AFTER)
        except Exception:  # derived: the next round, or the next start, retries
            log.exception("vectors.persist_failed")


async def _history(engine: Engine, git: GitHistory) -> None:
    await git.start(before_commit=engine.remote.recover if engine.remote else None)
    await git.run_forever()


async def _sync_after_writes(app: App, git: GitHistory, after: float) -> None:
    """Writes are synced `after` seconds (`git.sync_after`) once the history committed
    them (the `sync` job's own schedule runs besides), so another machine sees a burst
    of them soon."""
    wrote = [trio.Event()]
    git.on_commit.append(lambda: wrote[0].set())
    while True:
        await wrote[0].wait()
        await trio.sleep(after)
        wrote[0] = trio.Event()
        if app.scheduler is not None:  # a failure is the job's report, and logged
            await app.scheduler.run_now("sync")


async def _report_start(engine: Engine, scope: trio.CancelScope) -> None:
    """While start-up builds the indexes: systemd hears how far it is, and that it is
    alive (a long rebuild outlasts the start timeout otherwise)."""
    progress = engine.sync.progress
    with scope:
        while True:
            await trio.sleep(START_REPORT)
            sd_notify(f"STATUS=index rebuilding ({progress.percent}%, {progress.step})\n"
                      f"EXTEND_TIMEOUT_USEC={int(START_REPORT * 3 * 1e6)}")


async def _watchdog(interval: float) -> None:
    """WATCHDOG=1 while the event loop runs: a hung daemon is restarted by systemd."""
    while True:
        sd_notify("WATCHDOG=1")
        await trio.sleep(interval)


async def serve(root: Path, socket_path: Path, config: Config,
                task_status: trio.TaskStatus[App] = trio.TASK_STATUS_IGNORED, *,
                walk: ChildWalk | None = None) -> bool:
    """Run the daemon until SIGTERM/SIGINT. The caller holds the root's lock.
    False: stopped during start-up, with a worker thread abandoned mid-way. `walk`:
    start-up's walk of the files, if the caller started it already."""
    started = time.monotonic()
    check_socket_path(socket_path)  # before a long start-up: a live socket is never taken
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        run = _Lifecycle(build_engine(root, config), root, socket_path, config, started)
        completed = False
        try:
            completed = await run.serve(signals, task_status, walk)
        finally:
            if completed:
                run.engine.close()
            # else: stopped during start-up; its worker thread may still be writing the
            # derived indexes, which the next start reconciles (as after a kill -9).
            run.remove_socket()
    return completed


class _Lifecycle:
    """One run of the daemon, step by step: listen, start up (the socket answers while
    the indexes are built), start the services, serve, drain, shut down."""

    def __init__(self, engine: Engine, root: Path, socket_path: Path, config: Config,
                 started: float) -> None:
        self.engine, self.root, self.socket_path = engine, root, socket_path
        self.config, self.started = config, started
        self.stop, self.stop_watching, self.indexed = trio.Event(), trio.Event(), trio.Event()
        self.drain = Drain()
        self.starting = trio.CancelScope()  # start-up, cancelled by a signal
        self.bound: tuple[int, int] | None = None  # the socket this run bound

    def remove_socket(self) -> None:
        """Unlink the socket only if it is still the one this run bound."""
        if self.bound is not None and socket_identity(self.socket_path) == self.bound:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.socket_path)

    async def serve(self, signals: object, task_status: trio.TaskStatus[App],
                    walk: ChildWalk | None) -> bool:
        """Serve until a signal; False if the signal came before start-up finished."""
        async with trio.open_nursery() as services:
            services.start_soon(self._on_signal, signals)
            if self.config.watcher.enabled:
                services.start_soon(keep_watching, self.engine,
                                    self.config.watcher.quiet_period, self.stop_watching,
                                    self.indexed)
            listener, app = await self._listen()
            async with trio.open_nursery() as connections:
                connections.start_soon(_accept, listener, app, build_dispatcher(app),
                                       self.drain, connections)
                summary = await self._start_up(services, walk)
                if summary is None:
                    await self._abandon(listener)
                    services.cancel_scope.cancel()
                    connections.cancel_scope.cancel()
                    return False
                await self._start_services(services, app)
                # What the start loaded (the corpus's rows, the catalog's) lives as long
                # as the daemon: out of the cycle collector's sight, a full collection
                # no longer walks all of it while every thread waits for it.
                gc.collect()
                gc.freeze()
                self._announce_ready(services, app, summary)
                task_status.started(app)
                await self.stop.wait()
                await self._drain(app, listener, connections)
            await self._shut_down()
            services.cancel_scope.cancel()
        return True

    async def _on_signal(self, signals: object) -> None:
        # trio's signal receiver is typed as a context manager's result only.
        async for signum in signals:  # type: ignore[attr-defined]
            log.info("daemon.stopping", signal=signal.Signals(signum).name)
            self.stop.set()
            self.starting.cancel()  # a long start-up (a re-embedding) stops too
            return

    async def _listen(self) -> tuple[trio.SocketListener, App]:
        """The socket opens at once: while the indexes are built, `health` and
        memory_read answer and the other tools say busy (App.gate)."""
        state = self.engine.index_state()
        if state == "reset":
            log.info("index.rebuilding", reason="corrupted or an older schema")
        elif state == "new":
            log.info("index.creating", root=str(self.root))
        listener = await open_unix_listener(self.socket_path)
        self.bound = socket_identity(self.socket_path)
        app = App(engine=self.engine, config=self.config, root=self.root,
                  socket_path=self.socket_path, ready=False)
        app.scheduler = Scheduler(self.engine, idle_seconds=app.idle_seconds)
        return listener, app

    async def _start_up(self, services: trio.Nursery, walk: ChildWalk | None
                        ) -> dict[str, Any] | None:
        """The indexes in step with the files (reported to systemd as it goes), and the
        int8 path proved on this CPU; None when a signal stopped it."""
        reporting = trio.CancelScope()
        services.start_soon(_report_start, self.engine, reporting)
        services.start_soon(self.engine.scoring)
        with self.starting:
            summary = await self.engine.sync.startup(abandon_on_cancel=True, walk=walk)
        reporting.cancel()
        if self.starting.cancelled_caught:
            return None
        log.info("index.reconciled", **summary)
        self.indexed.set()
        return summary

    async def _abandon(self, listener: trio.SocketListener) -> None:
        log.info("daemon.stopped", during="start-up: the next start finishes the indexes")
        self.remove_socket()
        await listener.aclose()
        self.stop_watching.set()

    async def _start_services(self, services: trio.Nursery, app: App) -> None:
        engine = self.engine
        await engine.conversation.start()
        if engine.git is not None:  # its first commit does not hold up the start
            services.start_soon(_history, engine, engine.git)
            after = float(self.config.git.sync_after)
            jobs = self.config.jobs.enabled  # type: ignore[attr-defined]
            if self.config.git.remote and after and jobs:
                services.start_soon(_sync_after_writes, app, engine.git, after)
        services.start_soon(_flush_stats_every, engine, self.config.stats.flush_interval)
        services.start_soon(_snapshot_when_due, engine)
        services.start_soon(_persist_vectors, engine)
        services.start_soon(engine.learning.run_forever)
        # Older than this start: a killed daemon's temp files, never ours.
        services.start_soon(engine.sync.sweep_trash_temps,
                            time.time() - (time.monotonic() - self.started))
        # JobsConfig is made from the job table (config.py): the checker sees no field.
        if self.config.jobs.enabled and app.scheduler:  # type: ignore[attr-defined]
            services.start_soon(app.scheduler.run_forever)
        app.ready = True

    def _announce_ready(self, services: trio.Nursery, app: App,
                        summary: dict[str, Any]) -> None:
        pid, files = os.getpid(), summary["files"]
        log.info("daemon.ready", socket=str(self.socket_path), pid=pid, memories=files,
                 startup_s=round(time.monotonic() - self.started, 3))
        sd_notify(f"READY=1\nSTATUS=serving {files} memories")
        if (interval := watchdog_interval()) is not None:
            services.start_soon(_watchdog, interval)
        if sys.stderr.isatty():  # one line a person reads; the log line is for machines
            print(f"memoryd ready: socket {self.socket_path}, {files} memories, pid {pid}",
                  file=sys.stderr, flush=True)

    async def _drain(self, app: App, listener: trio.SocketListener,
                     connections: trio.Nursery) -> None:
        """New clients are told at once; idle connections close, busy ones finish what
        they received, up to the drain timeout (leaving `connections` waits for them)."""
        log.info("daemon.draining", connections=app.connections)
        sd_notify("STOPPING=1")
        app.stopping = True
        self.remove_socket()
        await listener.aclose()
        self.drain.begin()
        connections.cancel_scope.deadline = (trio.current_time()
                                             + self.config.server.drain_timeout)

    async def _shut_down(self) -> None:
        self.stop_watching.set()
        flushed = await self.engine.flush_stats()
        # the next start reads it, not every memory
        await _save_snapshot(self.engine, stopping=True)
        log.info("daemon.stopped", flushed_access_counts=flushed)
