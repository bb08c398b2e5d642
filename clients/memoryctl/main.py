"""memoryctl: one subcommand per memoryd tool, plus status, tools and raw calls.

Talks to the daemon over its socket with plain `socket` + `json` and starts in a
few tens of milliseconds: it must never import trio, chromadb, onnxruntime or
structlog.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from memoryctl import data, render
from memoryctl.client import Client, DaemonUnavailable, RpcFailure, resolve_root, resolve_socket
from memoryd.jobs.table import JOBS

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
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _common()
    parser = argparse.ArgumentParser(
        prog="memoryctl", parents=[common],
        description="Talk to memoryd, the memory daemon for LLM agents.")
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
    cmd("notify", "announce the reminders that are due now (runs the notify job)")
    p = cmd("dream", "tidy memory now: 1 classify the inbox, 2 + merge and [[wikilinks]], "
                     "3 + cross-category links and reminders")
    p.add_argument("--level", type=int, choices=[1, 2, 3], default=1)
    p.add_argument("--dry-run", action="store_true", help="show what would change")

    cmd("status", "is the daemon up? counts and health")
    cmd("jobs", "the background jobs: trigger, last run, next run, last result")
    p = cmd("run", "run a background job now and show what it changed")
    p.add_argument("job", help=", ".join(job.name for job in JOBS))
    p.add_argument("--dry-run", action="store_true", help="show what would change; change nothing")
    cmd("tools", "list the daemon's tools")
    p = cmd("agent", "JSON tool calls on stdin (an object or an array), results on stdout")
    p.add_argument("--list-tools", action="store_true", help="print the tools and exit")
    cmd("mcp", "serve MCP over stdio, bridged to the daemon (for MCP hosts)")
    p = cmd("call", "send any method with JSON params (for debugging)")
    p.add_argument("method")
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
        options: dict[str, Any] = {"help": help_ or None}
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
            p.add_argument(name, **options)
        elif kind == "boolean":
            p.add_argument(f"--{name.replace('_', '-')}", dest=name, action="store_true",
                           default=None, help=options["help"])
        else:
            p.add_argument(f"--{name.replace('_', '-')}", dest=name, **options)
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
    return params


def show(command: str, result: Any) -> str:
    if command == "ingest":
        return data.show_ingest(result)
    if command == "export":
        return f"exported {result['exported']} memories to {result['output']}"
    if command == "import":
        return data.show_import(result)
    if command in ("list", "search", "backlinks"):
        return render.memories(result["memories"], result.get("total"))
    if command == "smart-search":
        return render.ranked(result["memories"])
    if command == "explain":
        return render.explained(result)
    if command == "recall":
        return result["text"] or "(nothing relevant within the budget)"
    if command == "delete":
        return f"deleted {result['id']} (moved to {result['trash']})"
    if command in ("link", "unlink"):
        verb = "linked" if result["linked"] else "unlinked"
        return f"{verb} {result['source']} <-> {result['target']}"
    if command == "tools":
        return render.table([[t["name"], t["description"].splitlines()[0]]
                             for t in result["tools"]], ["TOOL", "DESCRIPTION"], flex=1)
    if command == "status":
        return render.mapping(result)
    if command == "remember":
        if result["stored"]:
            return (f"stored {result['id']}  type {result['type']}  importance "
                    f"{result['importance']} (refined in the background)")
        skipped = result["skipped"]
        dup = f" of {skipped['duplicate_of']}" if skipped.get("duplicate_of") else ""
        return f"skipped: {skipped['reason']}{dup}"
    if command == "add":
        lines = [f"{len(result['facts'])} fact(s), decided by {result['path']}"]
        lines += [f"  {f['event']:<6} {f['id'] or '-'}  {f['text']}"
                  + (f"  (replaces {f['replaces']})" if f.get("replaces") else "")
                  + f"\n         {f['reason']}" for f in result["facts"]]
        return "\n".join(lines)
    if command == "history":
        lines = []
        for v in result["versions"]:
            state = "current " if v["current"] else "replaced"
            lines.append(f"{v['created_at'][:19]}  {v['event']:<6} {state}  {v['id']}  "
                         f"{v['content']}")
            for r in v.get("revisions", []):
                shown = f"version {r['version']}" if r["version"] else "removed"
                lines.append(f"  commit {r['commit'][:12]}  {r['date'][:19]}  {shown}  "
                             f"{r['path']}  ({r['message']})")
                lines += [f"    {d}" for d in r["diff"].rstrip("\n").splitlines()]
        if not result.get("git"):
            lines.append("(git history is off: only the versions kept in the files)")
        return "\n".join(lines)
    if command == "restore":
        return f"restored {result['id']} to version {result['restored_from']}: now " \
               f"version {result['version']}\n{render.memory(result)}"
    if command == "jobs":
        return render.table([[j["name"], j["trigger"], str(j["last_run"] or "-")[:19],
                              str(j["next_run"] or "-")[:19],
                              str((j["last_result"] or {}).get("changes", "-"))]
                             for j in result["jobs"]],
                            ["JOB", "TRIGGER", "LAST RUN", "NEXT RUN", "CHANGED"], flex=1)
    if command in ("run", "notify", "dream"):
        verb = "would change" if result["dry_run"] else "changed"
        lines = [f"{result['job']}: {verb} {len(result['changes'])} "
                 f"({result['duration_ms']:.0f} ms)" + (f"; error: {result['error']}"
                                                        if result["error"] else "")]
        lines += [_change_line(c) for c in result["changes"]]
        return "\n".join(lines)
    if isinstance(result, dict) and "content" in result and "id" in result:
        return render.memory(result)
    return json.dumps(result, indent=2, ensure_ascii=False)


def _change_line(change: dict[str, Any]) -> str:
    """One job change: action, id, where the file was -> went, else what it became."""
    line = f"  {change['action']:<8} {change['id']}"
    if change.get("path"):
        line += f"  {change['path']}"
    if change.get("to"):
        return f"{line} -> {change['to']}"
    after = change.get("after") or {}
    shown = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in after.items())
    return f"{line}  {shown}" if shown else line


def run(args: argparse.Namespace, client: Client) -> Any:
    if args.command == "ingest":
        return data.ingest(client, tool_params(args))
    if args.command == "export":
        return data.export(client, tool_params(args), args.output)
    if args.command == "import":
        return data.import_(client, args.input, args.on_conflict)
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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    root, sock = getattr(args, "root", None), getattr(args, "socket", None)
    socket_path = resolve_socket(root, sock)
    try:
        waits = args.command in ("mcp", "ingest")  # as long as it takes
        with Client(socket_path, timeout=None if waits else 60) as client:
            if args.command in ("agent", "mcp"):
                from memoryctl import bridge

                if args.command == "agent":
                    return bridge.run_agent(client, sys.stdin, sys.stdout, args.list_tools)
                return bridge.run_mcp(client, sys.stdin, sys.stdout)
            result = run(args, client)
    except DaemonUnavailable:
        print(f"memoryctl: no memoryd is answering on {socket_path}.\n"
              f"Start one with:  memoryd serve --root {resolve_root(root)}", file=sys.stderr)
        return 3
    except RpcFailure as exc:
        print(f"memoryctl: {exc.message} (error {exc.code})", file=sys.stderr)
        return 1
    except BrokenPipeError:  # our stdout was closed (| head): not the daemon's fault
        sys.stderr.close()
        return 141
    except (TimeoutError, OSError) as exc:
        print(f"memoryctl: talking to {socket_path} failed: {exc}", file=sys.stderr)
        return 1
    if getattr(args, "json", False):
        print(json.dumps(result, ensure_ascii=False, indent=2))
    elif args.command == "export" and args.output is None:
        print(show(args.command, result), file=sys.stderr)  # stdout holds the JSONL
    else:
        print(show(args.command, result))
    return 0
