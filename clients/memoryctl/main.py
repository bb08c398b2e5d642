"""memoryctl: one subcommand per memoryd tool, plus status, tools and raw calls.

Talks to the daemon over its socket with plain `socket` + `json` and starts in a
few tens of milliseconds: it must never import trio, chromadb, onnxruntime or
structlog.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, TextIO

from memoryctl import coding, context_file, data, files, project
from memoryctl.shown import failed, show
from memoryd import __version__
from memoryd.schedule.table import JOBS
from memoryd_client import (
    Client,
    ConnectionLost,
    DaemonUnavailable,
    RpcFailure,
    resolve_root,
    resolve_socket,
)
from memoryd_client.wire import START_WAIT, describe_start

TOOLS_FILE = Path(__file__).with_name("tools.json")  # generated from memoryd/tools/spec.py


def load_tools() -> list[dict[str, Any]]:
    """The tool table as memoryctl needs it: subcommand, help, params with their schema."""
    return json.loads(TOOLS_FILE.read_text(encoding="utf-8"))


def _csv(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", default=argparse.SUPPRESS,
                        help="memory root (default: $MEMORY_HOME, else ~/.memory)")
    common.add_argument("--socket", default=argparse.SUPPRESS,
                        help="socket path (default: <root>/memory.sock or $MEMORY_SOCKET)")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print the raw JSON result")
    common.add_argument("--start-wait", type=float, default=argparse.SUPPRESS,
                        metavar="SECONDS", help="how long to wait out a daemon that is "
                        f"still starting (default {START_WAIT:g}; 0: fail at once)")
    return common


class StartNotice:
    """While a daemon starts, one line on a terminal's stderr that says how far it is
    (nothing when stderr is not a terminal); cleared when the wait is over."""

    def __init__(self, stream: TextIO = sys.stderr) -> None:
        self.stream = stream
        self.shown = False

    def __call__(self, progress: dict[str, Any]) -> None:
        if self.stream.isatty():
            self.stream.write(f"\r\x1b[K{describe_start(progress)}, waiting…")
            self.stream.flush()
            self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


def build_parser() -> argparse.ArgumentParser:
    common = _common()
    parser = argparse.ArgumentParser(
        prog="memoryctl", parents=[common],
        description="Talk to memoryd, the memory daemon for LLM agents.")
    parser.add_argument("--version", action="version", version=f"memoryctl {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def cmd(name: str, help_: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[common], help=help_, description=help_)

    for spec in load_tools():
        p = cmd(spec["command"], spec["help"])
        add_tool_command(p, spec)
        if spec["command"] == "export":
            p.add_argument("--output", "-o", help="write the JSONL here (default: stdout)")
        if spec["command"] == "import":
            p.add_argument("--input", "-i", help="read the JSONL from here (default: stdin)")
        if spec["command"] == "context":
            p.add_argument("--write", nargs="?", const="", metavar="FILE", help="keep the "
                           "block in FILE between memoryd's markers, the rest of it untouched "
                           "(default FILE: AGENTS.md at the project's root), for an agent "
                           "without hooks")
    coding.add_commands(sub, common)
    cmd("notify", "announce the reminders that are due now (runs the notify job)")
    p = cmd("dream", "tidy memory now: 1 classify the inbox, 2 + merge and [[wikilinks]], "
                     "3 + cross-category links and reminders")
    p.add_argument("--level", type=int, choices=[1, 2, 3], default=1,
                   help="how much to tidy (default 1)")
    p.add_argument("--dry-run", action="store_true", help="show what would change")

    cmd("status", "is the daemon up? counts and health")
    cmd("jobs", "the background jobs: trigger, last run, next run, last result")
    p = cmd("run", "run a background job now and show what it changed")
    p.add_argument("job", help=", ".join(job.name for job in JOBS))
    p.add_argument("--dry-run", action="store_true", help="show what would change; change nothing")
    cmd("tools", "list the daemon's tools")
    p = cmd("agent", "JSON tool calls on stdin (an object or an array; {\"prompt\": ...} "
                     "gives the recall block for it), results on stdout")
    p.add_argument("--list-tools", action="store_true", help="print the tools and exit")
    p.add_argument("--prompt", metavar="TEXT",
                   help="print the <memory> block to put before TEXT (- reads it from stdin)")
    p.add_argument("--session", help="with --prompt: the conversation's session id")
    p.add_argument("--token-budget", type=int, help="with --prompt: the block's size in tokens")
    cmd("mcp", "serve MCP over stdio, bridged to the daemon (for MCP hosts)")
    p = cmd("proxy", "an OpenAI-compatible endpoint that adds memory to any chat client")
    p.add_argument("--upstream", required=True, metavar="URL",
                   help="the real endpoint, e.g. http://localhost:11434/v1 (Ollama)")
    p.add_argument("--listen", default="127.0.0.1:8100", metavar="HOST:PORT",
                   help="where to serve (default 127.0.0.1:8100: this machine only)")
    p.add_argument("--top-k", type=int, help="memories per request (default: the daemon's "
                   "recall.top_k; a request's memory_top_k wins)")
    p.add_argument("--token-budget", type=int,
                   help="tokens the injected <memory> block may use (default: the daemon's "
                   "recall.token_budget)")
    p.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                   help="how long one upstream exchange may take, its reply streamed or "
                   "not (default 600)")
    p.add_argument("--quiet", action="store_true", help="do not log each request")
    p = cmd("web", "a local web page: memories, search traces, history, topics, jobs")
    p.add_argument("--listen", default="127.0.0.1:8765", metavar="HOST:PORT",
                   help="where to serve (this machine only; default 127.0.0.1:8765)")
    p.add_argument("--allow-edit", action="store_true",
                   help="let the page edit and delete memories (read-only by default)")
    p = cmd("obsidian", "make the memory root a tidy Obsidian vault: memoryd's own folders "
                        "in its excluded files")
    p.add_argument("--show-sessions", action="store_true",
                   help="keep the conversation turns (sessions/) in the vault's view")
    p.add_argument("--dry-run", action="store_true", help="say what would change")
    p = cmd("service", "run memoryd as a user service (systemd on Linux, launchd on macOS)")
    p.add_argument("action", choices=["install", "uninstall", "status"],
                   help="install (and start), uninstall (and stop), or status")
    p.add_argument("--dry-run", action="store_true",
                   help="print the service file and the commands; change nothing")
    p.add_argument("--system", choices=["systemd", "launchd"],
                   help="which service manager (default: this platform's)")
    p = cmd("call", "send any method with JSON params (for debugging)")
    p.add_argument("method", help="a tool (memory_write...) or a server method (health...)")
    p.add_argument("params", nargs="?", default="{}", help="JSON object")
    return parser


def _schema(prop: dict[str, Any]) -> dict[str, Any]:
    """A param's own schema, without the `null` of an optional one."""
    for option in prop.get("anyOf", []):
        if option.get("type") != "null":
            return {**option, "description": prop.get("description", option.get("description"))}
    return prop


# Params memoryctl fills itself (paging, batching) rather than taking as flags.
_OWN = {"export": {"after"}, "import": {"lines", "first_line"}}


def add_tool_command(p: argparse.ArgumentParser, spec: dict[str, Any]) -> None:
    """Arguments from the tool's params: positional ones in order, the rest as --flags
    (`top_k` is --top-k); types, choices and help come from the params' JSON Schema."""
    props: dict[str, Any] = spec["params"]["properties"]
    positional = spec["positional"]
    own = _OWN.get(spec["command"], set())
    for name in [*positional, *(n for n in props if n not in positional and n not in own)]:
        prop = props[name]
        schema = _schema(prop)
        kind = schema.get("type")
        help_ = schema.get("description") or ""
        if name == spec["stdin"]:
            help_ = f"{help_} (- reads it from stdin)".strip()
        options: dict[str, Any] = {"help": help_ or name.replace("_", " ")}
        if name == "project":  # a folder here; the daemon gets its scope
            options.update(metavar="DIR", help="a folder of the project: its repository's "
                           "memories, with the global ones")
        if "enum" in schema:
            options["choices"] = schema["enum"]
            options["metavar"] = name.upper()
            options["help"] = f"{help_} one of: {', '.join(schema['enum'])}".strip()
        elif kind == "integer":
            options["type"] = int
        elif kind == "number":
            options["type"] = float
        elif kind == "array":
            options["type"] = _csv
            options["metavar"] = "A,B"
        if name in positional:
            if name not in spec["params"].get("required", []):
                options["nargs"] = "?"
            p.add_argument(name, **options)
        elif kind == "boolean":
            p.add_argument(f"--{name.replace('_', '-')}", dest=name, action="store_true",
                           default=None, help=options["help"])
        else:
            p.add_argument(f"--{name.replace('_', '-')}", dest=name, **options)
    if "scope" in props and "project" not in props:
        p.add_argument("--project", dest="project_dir", metavar="DIR",
                       help="a folder of a project: that project's own scope (--scope "
                       "project:...)")
    p.set_defaults(tool=spec)


def tool_params(args: argparse.Namespace) -> dict[str, Any]:
    spec = args.tool
    params: dict[str, Any] = dict(spec["defaults"])
    for name in spec["params"]["properties"]:
        value = getattr(args, name, None)
        if value is not None:
            params[name] = value
    stdin = spec["stdin"]
    if stdin and params.get(stdin) == "-":
        params[stdin] = sys.stdin.read()
    if params.get("project"):
        params["project"] = coding.scope_of(params["project"])
    if getattr(args, "project_dir", None):
        if "scope" in params:
            raise SystemExit("memoryctl: give --scope or --project, not both")
        params["scope"] = coding.scope_of(args.project_dir)
    return params


def run(args: argparse.Namespace, client: Client) -> Any:
    if args.command == "ingest":
        return data.ingest(client, tool_params(args))
    if args.command == "export":
        return data.export(client, tool_params(args), args.output)
    if args.command == "import":
        return data.import_(client, args.input, args.on_conflict)
    if args.command == "context" and args.write is not None:
        return _context_file(client, args)
    if args.command == "projects":
        return coding.projects(client)
    if getattr(args, "tool", None) is not None:
        return client.call(args.tool["name"], tool_params(args))
    if args.command == "status":
        return client.call("stats")
    if args.command == "tools":
        return client.call("tools/list")
    if args.command == "jobs":
        return client.call("jobs/list")
    if args.command == "run":
        return client.call("jobs/run", {"job": args.job, "dry_run": args.dry_run})
    if args.command == "notify":
        return client.call("jobs/run", {"job": "notify"})
    if args.command == "dream":
        return client.call("jobs/run", {"job": "dream", "level": args.level,
                                        "dry_run": args.dry_run})
    if args.command == "call":
        try:
            params = json.loads(args.params)
        except json.JSONDecodeError as exc:
            raise SystemExit(f"memoryctl: params are not valid JSON: {exc}") from None
        return client.call(args.method, params)
    raise SystemExit(f"memoryctl: unknown command {args.command}")


def _context_file(client: Client, args: argparse.Namespace) -> dict[str, Any]:
    params = tool_params(args)
    found = project.of_folder(args.project or ".")
    if "scope" not in params:  # the block of this folder's project, unless told
        params.setdefault("project", found.scope)
    text = client.call("memory_context", params)["text"]
    folder = (found.root or Path.cwd()).resolve()
    path = Path(args.write) if args.write else folder / "AGENTS.md"
    # What the file links to stays in the project (or, for a file named outside it, in
    # the folder it was named in): a repository's AGENTS.md may be a link elsewhere.
    named_in = path.absolute().parent.resolve()
    try:
        written = context_file.write(path, text, within=folder if named_in.is_relative_to(
            folder) else named_in)
    except (files.SettingsError, OSError) as exc:
        raise SystemExit(f"memoryctl context: {exc}") from None
    return {"file": str(path), "written": written}


def _proxy(args: argparse.Namespace, socket_path: Path) -> int:
    from memoryctl import proxy

    settings = proxy.Settings(upstream=args.upstream, socket_path=socket_path,
                              top_k=args.top_k, token_budget=args.token_budget,
                              upstream_timeout=args.timeout, quiet=args.quiet)
    try:
        return proxy.run(settings, args.listen)
    except (ValueError, OSError) as exc:
        print(f"memoryctl proxy: {exc}", file=sys.stderr)
        return 2


def _web(args: argparse.Namespace, socket_path: Path) -> int:
    from memoryctl import web

    try:
        return web.run(socket_path, args.listen, args.allow_edit)
    except (ValueError, OSError) as exc:
        print(f"memoryctl web: {exc}", file=sys.stderr)
        return 2


def _service(args: argparse.Namespace, socket_path: Path) -> int:
    from memoryctl import service

    root = resolve_root(getattr(args, "root", None))
    code = service.run(args.action, root, args.system, args.dry_run)
    if args.action == "status" and not args.dry_run:
        try:
            with Client(socket_path, retries=0, timeout=10) as client:
                health = client.call("health")
            print(f"memoryd answers on {socket_path}: pid {health['pid']}, up "
                  f"{health['uptime_s']:.0f} s")
        except (DaemonUnavailable, OSError, RpcFailure):
            print(f"nothing answers on {socket_path}")
    return code


def _obsidian(args: argparse.Namespace, socket_path: Path) -> int:
    from memoryctl import obsidian

    return obsidian.run(resolve_root(getattr(args, "root", None)), args.show_sessions,
                        args.dry_run)


LOCAL = {"proxy": _proxy, "web": _web, "service": _service, "hooks": coding.run_hooks,
         "hook": coding.run_hook, "obsidian": _obsidian}


def start_hint(root: Path) -> str:
    """The command that starts a daemon, as this user can type it."""
    serve = f"serve --root {root}"
    if shutil.which("memoryd"):
        return f"memoryd {serve}"
    beside = Path(sys.executable).parent / "memoryd"  # a venv that is not activated
    if beside.exists():
        return f"{beside} {serve}"
    if Path("scripts/serve").exists():
        return "./scripts/serve"
    return f"{sys.executable} -m memoryd {serve}"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    root, sock = getattr(args, "root", None), getattr(args, "socket", None)
    socket_path = resolve_socket(root, sock)
    if args.command in LOCAL:  # they start without the daemon and report it when needed
        return LOCAL[args.command](args, socket_path)
    notice = StartNotice()
    try:
        waits = args.command in ("mcp", "ingest")  # as long as it takes
        with Client(socket_path, timeout=None if waits else 60, retries=0,
                    start_wait=getattr(args, "start_wait", START_WAIT),
                    on_start=notice) as client:
            if args.command in ("agent", "mcp"):
                from memoryctl import bridge

                if args.command == "agent":
                    return bridge.run_agent(client, sys.stdin, sys.stdout, args)
                return bridge.run_mcp(client, sys.stdin, sys.stdout)
            try:
                result = run(args, client)
            finally:
                notice.clear()  # before what is printed next, result or error
        if getattr(args, "json", False):
            print(json.dumps(result, ensure_ascii=False, indent=2))
        elif args.command == "export" and args.output is None:
            print(show(args.command, result), file=sys.stderr)  # stdout holds the JSONL
        else:
            print(show(args.command, result))
        sys.stdout.flush()
        if failed(args.command, result):  # said above, with its reason; a script sees it too
            return 1
    except ConnectionLost as exc:  # it answered once, then went away mid-call
        print(f"memoryctl: talking to {socket_path} failed: {exc}", file=sys.stderr)
        return 1
    except DaemonUnavailable:
        print(f"memoryctl: no memoryd is answering on {socket_path}.\n"
              f"Start one with:  {start_hint(resolve_root(root))}", file=sys.stderr)
        return 3
    except RpcFailure as exc:
        print(f"memoryctl: {exc.message} (error {exc.code})", file=sys.stderr)
        return 1
    except BrokenPipeError:  # our stdout was closed (| head): not the daemon's fault
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the exit's flush does not fail again
        return 141
    except (TimeoutError, OSError) as exc:
        print(f"memoryctl: talking to {socket_path} failed: {exc}", file=sys.stderr)
        return 1
    return 0
