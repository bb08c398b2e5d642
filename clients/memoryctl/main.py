"""memoryctl: one subcommand per memoryd tool, plus status, tools and raw calls.

Talks to the daemon over its socket with plain `socket` + `json` and starts in a
few tens of milliseconds: it must never import trio, chromadb, onnxruntime or
structlog.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from memoryctl import render
from memoryctl.client import Client, DaemonUnavailable, RpcFailure, resolve_root, resolve_socket

CATEGORIES = ["soul", "character", "people", "project", "date", "knowledge", "feedback",
              "preferences", "decisions", "lessons", "habits", "skills", "inbox", "reminders"]
TYPES = ["episodic", "semantic", "procedural", "working"]


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

    p = cmd("write", "remember a note (TEXT, or - to read it from stdin)")
    p.add_argument("text")
    p.add_argument("--category", choices=CATEGORIES)
    p.add_argument("--tags", type=_csv, help="comma-separated tags")
    p.add_argument("--scope", help="global, agent:NAME or user:NAME")
    p.add_argument("--source", default="memoryctl")
    p.add_argument("--type", choices=TYPES)
    p.add_argument("--importance", type=float)
    p.add_argument("--session")
    p.add_argument("--role", choices=["user", "assistant"])
    p.add_argument("--created-at", dest="created_at", help="ISO 8601 time (imports)")

    cmd("read", "show one memory").add_argument("id")

    p = cmd("update", "change a memory (content, category, tags, type, importance)")
    p.add_argument("id")
    p.add_argument("--content", help="new content (- to read it from stdin)")
    p.add_argument("--category", choices=CATEGORIES)
    p.add_argument("--tags", type=_csv, help="replace the tags (comma-separated)")
    p.add_argument("--type", choices=TYPES)
    p.add_argument("--importance", type=float)
    p.add_argument("--version", type=int, help="fail unless the memory is at this version")

    cmd("delete", "move a memory to the trash").add_argument("id")

    p = cmd("list", "list memories, newest first")
    p.add_argument("--phase", choices=["inbox", "organized"])
    p.add_argument("--category", choices=CATEGORIES)
    p.add_argument("--scope")
    p.add_argument("--source")
    p.add_argument("--tags", type=_csv)
    p.add_argument("--limit", type=int)
    p.add_argument("--offset", type=int)

    p = cmd("search", "exact keyword search (every word must occur), newest first")
    p.add_argument("query")
    p.add_argument("--tags", type=_csv)
    p.add_argument("--scope")
    p.add_argument("--phase", choices=["inbox", "organized"])
    p.add_argument("--category", choices=CATEGORIES)
    p.add_argument("--kind", choices=["note", "fact", "turn", "summary", "reminder"])
    p.add_argument("--type", choices=TYPES)
    p.add_argument("--session")
    p.add_argument("--from", dest="from_", metavar="YYYY-MM-DD")
    p.add_argument("--to", metavar="YYYY-MM-DD")
    p.add_argument("--limit", type=int)
    p.add_argument("--offset", type=int)

    p = cmd("tag", "add or remove tags")
    p.add_argument("id")
    p.add_argument("--add", type=_csv, default=[])
    p.add_argument("--remove", type=_csv, default=[])

    for name, help_ in (("link", "link two memories (both directions)"),
                        ("unlink", "remove the link between two memories")):
        p = cmd(name, help_)
        p.add_argument("source")
        p.add_argument("target")

    cmd("backlinks", "memories that link to ID").add_argument("id")

    p = cmd("upgrade", "promote an inbox memory to organized")
    p.add_argument("id")
    p.add_argument("--category", choices=[c for c in CATEGORIES if c != "inbox"])

    ranked = {}
    for name, help_ in (("smart-search", "ranked search by meaning and words"),
                        ("explain", "every candidate of a smart search, with each stage's "
                                    "score and why it was kept or dropped")):
        p = ranked[name] = cmd(name, help_)
        p.add_argument("query")
        p.add_argument("--top-k", dest="top_k", type=int)
        p.add_argument("--scope")
        p.add_argument("--category", choices=CATEGORIES)
        p.add_argument("--tags", type=_csv)
        p.add_argument("--phase", choices=["inbox", "organized"])
        p.add_argument("--type", choices=TYPES)
        p.add_argument("--session")
        p.add_argument("--recency-weight", dest="recency_weight", type=float)
        p.add_argument("--importance-weight", dest="importance_weight", type=float)
        p.add_argument("--score-threshold", dest="score_threshold", type=float)
        p.add_argument("--mmr-lambda", dest="mmr_lambda", type=float)
        p.add_argument("--include-compressed", dest="include_compressed",
                       action="store_true", default=None)

    p = cmd("recall", "the <memory> block a model should see for QUERY")
    p.add_argument("query")
    p.add_argument("--session")
    p.add_argument("--scope")
    p.add_argument("--token-budget", dest="token_budget", type=int)
    p.add_argument("--top-k", dest="top_k", type=int)

    p = cmd("remind", "create a reminder: --when 'tomorrow at 9' (or 明天下午三点) or --due-at")
    p.add_argument("text")
    p.add_argument("--when", help="in words: 'tomorrow at 9', 'in 2 hours', '下周一'")
    p.add_argument("--due-at", dest="due_at", help="ISO 8601 time")
    p.add_argument("--scope")
    p.add_argument("--tags", type=_csv)
    cmd("notify", "announce the reminders that are due now (runs the notify job)")
    p = cmd("dream", "tidy memory now: 1 classify the inbox, 2 + merge and [[wikilinks]], "
                     "3 + cross-category links and reminders")
    p.add_argument("--level", type=int, choices=[1, 2, 3], default=1)
    p.add_argument("--dry-run", action="store_true", help="show what would change")

    cmd("status", "is the daemon up? counts and health")
    cmd("jobs", "the background jobs: trigger, last run, next run, last result")
    p = cmd("run", "run a background job now and show what it changed")
    p.add_argument("job", help="expire, decay, upgrade, consolidate, decay-sweep, notify or dream")
    p.add_argument("--dry-run", action="store_true", help="show what would change; change nothing")
    cmd("tools", "list the daemon's tools")
    p = cmd("agent", "JSON tool calls on stdin (an object or an array), results on stdout")
    p.add_argument("--list-tools", action="store_true", help="print the tools and exit")
    cmd("mcp", "serve MCP over stdio, bridged to the daemon (for MCP hosts)")
    p = cmd("call", "send any method with JSON params (for debugging)")
    p.add_argument("method")
    p.add_argument("params", nargs="?", default="{}", help="JSON object")
    return parser


_RANKED = ("query", "top_k", "scope", "category", "tags", "phase", "type", "session",
           "recency_weight", "importance_weight", "score_threshold", "mmr_lambda",
           "include_compressed")
# Subcommand -> (method, the argparse names that are tool params).
TOOL_COMMANDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "write": ("memory_write", ("category", "tags", "scope", "source", "type", "importance",
                               "session", "role", "created_at")),
    "read": ("memory_read", ("id",)),
    "update": ("memory_update", ("id", "content", "category", "tags", "type", "importance",
                                 "version")),
    "delete": ("memory_delete", ("id",)),
    "list": ("memory_list", ("phase", "category", "scope", "source", "tags", "limit", "offset")),
    "search": ("memory_search", ("query", "tags", "scope", "phase", "category", "kind", "type",
                                 "session", "from_", "to", "limit", "offset")),
    "tag": ("memory_tag", ("id", "add", "remove")),
    "link": ("memory_link", ("source", "target")),
    "unlink": ("memory_unlink", ("source", "target")),
    "backlinks": ("memory_backlinks", ("id",)),
    "upgrade": ("memory_upgrade", ("id", "category")),
    "smart-search": ("memory_smart_search", _RANKED),
    "explain": ("memory_explain", _RANKED),
    "recall": ("memory_recall", ("query", "session", "scope", "token_budget", "top_k")),
    "remind": ("memory_remind", ("due_at", "when", "scope", "tags")),
}


def tool_params(args: argparse.Namespace) -> dict[str, Any]:
    _method, names = TOOL_COMMANDS[args.command]
    params: dict[str, Any] = {}
    for name in names:
        value = getattr(args, name, None)
        if value is not None:
            params["from" if name == "from_" else name] = value
    if args.command in ("write", "remind"):
        params["content"] = sys.stdin.read() if args.text == "-" else args.text
    if args.command == "update" and params.get("content") == "-":
        params["content"] = sys.stdin.read()
    return params


def show(command: str, result: Any) -> str:
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
    if args.command in TOOL_COMMANDS:
        return client.call(TOOL_COMMANDS[args.command][0], tool_params(args))
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
        with Client(socket_path, timeout=None if args.command == "mcp" else 60) as client:
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
    else:
        print(show(args.command, result))
    return 0
