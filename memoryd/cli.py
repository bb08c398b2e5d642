"""`memoryd serve`: resolve the root, read the config, take the lock, run."""

from __future__ import annotations

import os

# onnxruntime (retrieval) queues telemetry unless this is set before its import.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import argparse
import sys
from pathlib import Path

from memoryd import __version__

EXIT_RUNTIME, EXIT_CONFIG = 1, 2


def resolve_root(arg: str | None) -> Path:
    raw = arg or os.environ.get("MEMORY_HOME") or "~/.memory"
    return Path(raw).expanduser().absolute()


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
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    return EXIT_CONFIG


def _serve(args: argparse.Namespace) -> int:
    from memoryd import log
    from memoryd.config import ConfigError, load_config

    root = resolve_root(args.root)
    config_path = Path(args.config).expanduser() if args.config else root / "config.yaml"
    if args.config and not config_path.exists():
        print(f"memoryd: config file {config_path} does not exist", file=sys.stderr)
        return EXIT_CONFIG
    try:
        config = load_config(config_path)
    except ConfigError as exc:
        print(f"memoryd: invalid config: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    log.configure(args.log_level or config.logging.level,
                  args.log_format or config.logging.format)
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        print(f"memoryd: cannot create the memory root {root}: {exc}", file=sys.stderr)
        return EXIT_RUNTIME
    socket_path = Path(args.socket or config.socket or root / "memory.sock").expanduser()

    import trio

    from memoryd.server import lock
    from memoryd.server.daemon import serve
    from memoryd.server.listener import SocketPathTooLong

    try:
        lock_fd = lock.acquire(root)
    except lock.AlreadyRunning as exc:
        print(f"memoryd: {exc}", file=sys.stderr)
        return EXIT_RUNTIME
    try:
        trio.run(serve, root, socket_path.absolute(), config)
    except SocketPathTooLong as exc:
        print(f"memoryd: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        return 0
    finally:
        os.close(lock_fd)
    return 0
