"""The daemon's lifecycle: open the stores, reconcile, serve, drain, exit.

One nursery owns the listener, every connection, the watcher and the stats
flusher. SIGTERM/SIGINT stop accepting (the socket file goes at once), close
idle connections, let busy ones finish what they received (up to
`server.drain_timeout`), flush access counts and exit 0.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

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


async def _keep_watching(engine: Engine, quiet_period: float, stop: trio.Event,
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


async def _save_snapshot(engine: Engine) -> None:
    """The snapshot is derived: a failure to save it is logged, never fatal."""
    try:
        await engine.sync.snapshots.save()
    except Exception:
        log.exception("index.snapshot.failed")


async def _snapshot_when_due(engine: Engine) -> None:
    """Save the corpus snapshot once enough changed (snapshots.EVERY_*)."""
    while True:
        await trio.sleep(SNAPSHOT_CHECK)
        if engine.sync.snapshots.due():
            await _save_snapshot(engine)


async def _persist_vectors(engine: Engine) -> None:
    """Write the new memories' vectors to the vector store in batches (a write's
    acknowledgement does not wait for chroma; HybridIndex.persist_deferred)."""
    while True:
        await trio.sleep(PERSIST_EVERY)
        try:
            await engine.persist_vectors()
        except Exception:  # derived: the next round, or the next start, retries
            log.exception("vectors.persist_failed")


async def _history(git: GitHistory) -> None:
    await git.start()
    await git.run_forever()


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
        engine = build_engine(root, config)
        completed = False
        ours: list[tuple[int, int] | None] = []
        try:
            completed = await _serve(engine, root, socket_path, config, signals, started,
                                     task_status, ours, walk)
        finally:
            if completed:
                engine.close()
            # else: stopped during start-up; its worker thread may still be writing the
            # derived indexes, which the next start reconciles (as after a kill -9).
            _remove_our_socket(socket_path, ours)
    return completed


def _remove_our_socket(socket_path: Path, ours: list[tuple[int, int] | None]) -> None:
    """Unlink the socket only if it is still the one this daemon bound."""
    if ours and ours[0] is not None and socket_identity(socket_path) == ours[0]:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(socket_path)


async def _serve(engine: Engine, root: Path, socket_path: Path, config: Config,
                 signals: object, started: float, task_status: trio.TaskStatus[App],
                 ours: list[tuple[int, int] | None], walk: ChildWalk | None) -> bool:
    """Serve until a signal; False if the signal came before start-up finished."""
    stop, stop_watching, indexed = trio.Event(), trio.Event(), trio.Event()
    drain = Drain()
    starting = trio.CancelScope()
    async with trio.open_nursery() as services:

        async def on_signal() -> None:
            # trio's signal receiver is typed as a context manager's result only.
            async for signum in signals:  # type: ignore[attr-defined]
                log.info("daemon.stopping", signal=signal.Signals(signum).name)
                stop.set()
                starting.cancel()  # a long start-up (a re-embedding) stops too
                return

        services.start_soon(on_signal)
        if config.watcher.enabled:
            services.start_soon(_keep_watching, engine, config.watcher.quiet_period,
                                stop_watching, indexed)
        if engine.index_state() == "reset":
            log.info("index.rebuilding", reason="corrupted or an older schema")
        elif engine.index_state() == "new":
            log.info("index.creating", root=str(root))
        # The socket opens at once: while the indexes are built, `health` and
        # memory_read answer and the other tools say busy (App.gate).
        listener = await open_unix_listener(socket_path)
        ours.append(socket_identity(socket_path))
        app = App(engine=engine, config=config, root=root, socket_path=socket_path,
                  ready=False)
        scheduler = app.scheduler = Scheduler(engine, idle_seconds=app.idle_seconds)
        dispatcher = build_dispatcher(app)
        async with trio.open_nursery() as connections:
            connections.start_soon(_accept, listener, app, dispatcher, drain, connections)
            reporting = trio.CancelScope()
            services.start_soon(_report_start, engine, reporting)
            services.start_soon(engine.scoring)  # the int8 path proved on this CPU now
            with starting:
                summary = await engine.sync.startup(abandon_on_cancel=True, walk=walk)
            reporting.cancel()
            if starting.cancelled_caught:
                log.info("daemon.stopped",
                         during="start-up: the next start finishes the indexes")
                _remove_our_socket(socket_path, ours)
                await listener.aclose()
                stop_watching.set()
                services.cancel_scope.cancel()
                connections.cancel_scope.cancel()
                return False
            log.info("index.reconciled", **summary)
            indexed.set()
            await engine.conversation.start()
            if engine.git is not None:  # its first commit does not hold up the start
                services.start_soon(_history, engine.git)
            services.start_soon(_flush_stats_every, engine, config.stats.flush_interval)
            services.start_soon(_snapshot_when_due, engine)
            services.start_soon(_persist_vectors, engine)
            services.start_soon(engine.conversation.run_forever)
            # Older than this start: a killed daemon's temp files, never ours.
            services.start_soon(engine.sync.sweep_trash_temps,
                                time.time() - (time.monotonic() - started))
            if config.jobs.enabled:  # type: ignore[attr-defined]  # JobsConfig: see config.py
                services.start_soon(scheduler.run_forever)
            app.ready = True
            log.info("daemon.ready", socket=str(socket_path), pid=os.getpid(),
                     memories=summary["files"], startup_s=round(time.monotonic() - started, 3))
            sd_notify(f"READY=1\nSTATUS=serving {summary['files']} memories")
            if (interval := watchdog_interval()) is not None:
                services.start_soon(_watchdog, interval)
            if sys.stderr.isatty():  # one line a person reads; the log line is for machines
                print(f"memoryd ready: socket {socket_path}, {summary['files']} memories, "
                      f"pid {os.getpid()}", file=sys.stderr, flush=True)
            task_status.started(app)
            await stop.wait()
            log.info("daemon.draining", connections=app.connections)
            sd_notify("STOPPING=1")
            app.stopping = True
            _remove_our_socket(socket_path, ours)  # new clients are told at once
            await listener.aclose()
            drain.begin()
            # Leaving this block waits for busy connections to finish, up to the deadline.
            connections.cancel_scope.deadline = trio.current_time() + config.server.drain_timeout
        stop_watching.set()
        flushed = await engine.flush_stats()
        await _save_snapshot(engine)  # the next start reads it, not every memory
        log.info("daemon.stopped", flushed_access_counts=flushed)
        services.cancel_scope.cancel()
    return True

