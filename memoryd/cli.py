"""`memoryd serve`: resolve the root, read the config, take the lock, run."""

from __future__ import annotations

import os

# onnxruntime (retrieval) queues telemetry unless this is set before its import.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import argparse
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from memoryd import __version__
from memoryd.root import resolve_root

if TYPE_CHECKING:  # imported when used: `memoryd --version` stays light
    from memoryd.config import Config
    from memoryd.store.walk import ChildWalk

EXIT_RUNTIME, EXIT_CONFIG = 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memoryd", description="memoryd: long-term memory for LLM agents, as Markdown "
        "files, served as JSON-RPC tools on a Unix socket.")
    parser.add_argument("--version", action="version", version=f"memoryd {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the daemon in the foreground")
    serve.add_argument("--root", help="memory root (default: $MEMORY_HOME, else ~/.memory)")
    serve.add_argument("--socket", help="socket path (default: <root>/memory.sock)")
    serve.add_argument("--config", help="config file (default: <root>/config.yaml)")
    serve.add_argument("--log-level", choices=["debug", "info", "warning", "error"])
    serve.add_argument("--log-format", choices=["auto", "json", "console", "journal"])
    reindex = sub.add_parser("reindex", help="rebuild every derived index from the files and "
                             "re-embed every memory (the daemon must be stopped)")
    reindex.add_argument("--root", help="memory root (default: $MEMORY_HOME, else ~/.memory)")
    reindex.add_argument("--config", help="config file (default: <root>/config.yaml)")
    rescope = sub.add_parser("rescope", help="move every memory of one scope to another "
                             "(the daemon must be stopped)")
    rescope.add_argument("old", metavar="FROM", help="the scope to empty, e.g. agent:my-agent")
    rescope.add_argument("new", metavar="TO", help="the scope its memories move to")
    rescope.add_argument("--root", help="memory root (default: $MEMORY_HOME, else ~/.memory)")
    migrate = sub.add_parser("migrate", help="rename an existing root's notes to readable "
                             "names (the daemon must be stopped)")
    migrate.add_argument("--layout", choices=["readable"], required=True,
                         help="readable: <title>-<short id>.md instead of <id>.md")
    migrate.add_argument("--dry-run", action="store_true",
                         help="list the renames; change nothing")
    migrate.add_argument("--root", help="memory root (default: $MEMORY_HOME, else ~/.memory)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "reindex":
        return _reindex(args)
    if args.command == "rescope":
        return _rescope(args)
    if args.command == "migrate":
        return _migrate(args)
    return EXIT_CONFIG


def _prepare(args: argparse.Namespace) -> tuple[Path, Config] | int:
    """Root and config, or an exit code after saying what is wrong."""
    from memoryd import log
    from memoryd.config import ConfigError, load_config
    from memoryd.models import variant

    root = resolve_root(args.root)
    config_path = Path(args.config).expanduser() if args.config else root / "config.yaml"
    if args.config and not config_path.exists():
        print(f"memoryd: config file {config_path} does not exist", file=sys.stderr)
        return EXIT_CONFIG
    try:
        config = load_config(config_path)
        variant.forced(config.embedder)  # refused here, with a message; applied by the wiring
    except ConfigError as exc:
        print(f"memoryd: invalid config: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    log.configure(getattr(args, "log_level", None) or config.logging.level,
                  getattr(args, "log_format", None) or config.logging.format)
    os.umask(0o077)  # every file and folder the daemon creates is the user's alone
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        mode = stat.S_IMODE(root.stat().st_mode)
        if mode & 0o077:
            root.chmod(0o700)
            for path in (root / "index").rglob("*"):  # made before umask 077 was set
                if not path.is_symlink() and stat.S_IMODE(path.stat().st_mode) & 0o077:
                    path.chmod(stat.S_IMODE(path.stat().st_mode) & 0o700)
            import structlog

            structlog.get_logger("memoryd").info("root.tightened", root=str(root),
                                                 was=oct(mode), now="0o700")
    except OSError as exc:
        print(f"memoryd: cannot create the memory root {root}: {exc}", file=sys.stderr)
        return EXIT_RUNTIME
    return root, config


def _reindex(args: argparse.Namespace) -> int:
    prepared = _prepare(args)
    if isinstance(prepared, int):
        return prepared
    root, config = prepared
    import trio

    from memoryd.server import lock
    from memoryd.server.wiring import build_engine

    try:
        lock_fd = lock.acquire(root)
    except lock.AlreadyRunning as exc:
        print(f"memoryd: {exc}", file=sys.stderr)
        return EXIT_RUNTIME

    async def run() -> dict[str, int]:
        engine = build_engine(root, config, reindex=True)
        try:
            return await engine.sync.startup(force_embed=True)
        finally:
            engine.close()

    try:
        summary = trio.run(run)
    finally:
        os.close(lock_fd)
    print("reindexed: " + ", ".join(f"{k} {v}" for k, v in summary.items()))
    return 0


def _rescope(args: argparse.Namespace) -> int:
    from memoryd.rescope import check_scope, rescope

    for value in (args.old, args.new):
        if (problem := check_scope(value)) is not None:
            print(f"memoryd: {problem}", file=sys.stderr)
            return EXIT_CONFIG
    if args.old == args.new:
        print("memoryd: FROM and TO are the same scope", file=sys.stderr)
        return EXIT_CONFIG
    held = _stopped(args.root)
    if isinstance(held, int):
        return held
    root, lock_fd = held
    try:
        done = rescope(root, args.old, args.new)
    finally:
        os.close(lock_fd)
    print(f"moved {done.moved} memories from {args.old} to {args.new}; the next start "
          "indexes them")
    if done.unreadable:
        print(f"left alone {len(done.unreadable)} files memoryd cannot read (see "
              f"`memoryctl status`): {', '.join(done.unreadable[:5])}", file=sys.stderr)
    return 0


def _run_daemon(root: Path, socket_path: Path, config: Config, walk: ChildWalk | None
                ) -> int | None:
    """trio.run of the daemon: its exit code, None when it stopped during start-up with
    a worker thread abandoned mid-way."""
    from memoryd.server.native import one_blas_thread_per_caller

    one_blas_thread_per_caller()  # before numpy's first import
    import functools

    import trio

    from memoryd.server.daemon import serve
    from memoryd.server.listener import SocketInUse, SocketPathTooLong

    try:
        completed = trio.run(functools.partial(serve, root, socket_path, config, walk=walk))
    except (SocketPathTooLong, SocketInUse) as exc:
        print(f"memoryd: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        return 0
    return 0 if completed else None


def _serve(args: argparse.Namespace) -> int:
    prepared = _prepare(args)
    if isinstance(prepared, int):
        return prepared
    root, config = prepared
    socket_path = Path(args.socket or config.socket or root / "memory.sock").expanduser()

    from memoryd import allocator
    from memoryd.server import lock
    from memoryd.store.walk import INDEXED_DIRS, ChildWalk

    allocator.tune()  # before the first large block: a long run gives back what it frees
    try:
        lock_fd = lock.acquire(root)
    except lock.AlreadyRunning as exc:
        print(f"memoryd: {exc}", file=sys.stderr)
        return EXIT_RUNTIME
    # Start-up's walk of the files, in a child process, started before the imports
    # below (half a second): it has often ended by the time start-up needs it.
    try:
        walk: ChildWalk | None = ChildWalk(root, INDEXED_DIRS)
    except OSError:
        walk = None  # start-up walks without it
    try:
        code = _run_daemon(root, socket_path.absolute(), config, walk)
    finally:
        if walk is not None:
            walk.close()
        os.close(lock_fd)
    if code is None:
        # A start-up worker (embedding, chroma) was abandoned mid-way: interpreter
        # shutdown under it would abort in native code. Leave now; the next start
        # reconciles the derived indexes, as after a crash.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return code


def _stopped(root_arg: str | None) -> tuple[Path, int] | int:
    """The root and its daemon lock (held: no daemon may start meanwhile), or the exit
    code when there is no root or a daemon runs on it."""
    from memoryd.server import lock

    root = resolve_root(root_arg)
    if not root.is_dir():
        print(f"memoryd: no memory root at {root}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        return root, lock.acquire(root)
    except lock.AlreadyRunning as exc:
        print(f"memoryd: {exc} (stop it first: its files and indexes must not change "
              "under it)", file=sys.stderr)
        return EXIT_RUNTIME


def _migrate(args: argparse.Namespace) -> int:
    from memoryd.migrate import migrate

    held = _stopped(args.root)
    if isinstance(held, int):
        return held
    root, lock_fd = held
    try:
        done = migrate(root, args.dry_run, lambda n: print(f"\r{n} files looked at",
                                                           end="", file=sys.stderr))
    finally:
        os.close(lock_fd)
    print("\r", end="", file=sys.stderr)
    for old, new in done.renamed[:20] if args.dry_run else []:
        print(f"{old} -> {new}")
    verb = "would rename" if args.dry_run else "renamed"
    more = " (the first 20 above)" if args.dry_run and len(done.renamed) > 20 else ""
    print(f"{verb} {len(done.renamed)} files{more}; {done.kept} kept their names"
          + (f"; {len(done.unreadable)} unreadable, left alone" if done.unreadable else "")
          + (f"; committed {done.committed[:12]}" if done.committed else ""))
    return 0
