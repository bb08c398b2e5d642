"""Clients for agents that cannot hold a socket themselves.

`memoryctl agent`: JSON tool calls on stdin (one object or an array), results on
stdout. `memoryctl mcp`: an MCP stdio server, bridged line for line to the
daemon's socket (the daemon speaks MCP's initialize / tools/list / tools/call).
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any, TextIO

from memoryctl.client import Client, RpcFailure


def _one_call(client: Client, call: Any) -> dict[str, Any]:
    if not isinstance(call, dict):
        return {"error": {"code": -32600, "message": "each call must be a JSON object"}}
    name = call.get("name") or call.get("method")
    params = call.get("arguments", call.get("params", {}))
    if not isinstance(name, str):
        return {"error": {"code": -32600, "message": "a call needs `name` (the tool)"}}
    try:
        return {"name": name, "result": client.call(name, params)}
    except RpcFailure as exc:
        error: dict[str, Any] = {"code": exc.code, "message": exc.message}
        if exc.data is not None:
            error["data"] = exc.data
        return {"name": name, "error": error}


def run_agent(client: Client, stdin: TextIO, stdout: TextIO, list_tools: bool) -> int:
    if list_tools:
        json.dump(client.call("tools/list"), stdout, ensure_ascii=False, indent=2)
        stdout.write("\n")
        return 0
    text = stdin.read()
    try:
        calls = json.loads(text)
    except json.JSONDecodeError as exc:
        print(f"memoryctl agent: stdin is not JSON: {exc}", file=sys.stderr)
        return 2
    if isinstance(calls, list):
        results: Any = [_one_call(client, c) for c in calls]
        failed = any("error" in r for r in results)
    else:
        results = _one_call(client, calls)
        failed = "error" in results
    json.dump(results, stdout, ensure_ascii=False)
    stdout.write("\n")
    return 1 if failed else 0


# The daemon closes a connection silent for `server.idle_timeout` (5 minutes by
# default); an MCP host may stay quiet for hours, so the bridge says it is alive.
KEEPALIVE_SECONDS = 60.0
_KEEPALIVE = b'{"jsonrpc": "2.0", "method": "notifications/keepalive"}'


def run_mcp(client: Client, stdin: TextIO, stdout: TextIO,
            keepalive: float = KEEPALIVE_SECONDS) -> int:
    """Copy stdin lines to the socket and socket lines to stdout until either closes."""
    write_lock = threading.Lock()
    send_lock = threading.Lock()
    done = threading.Event()

    def keep_alive() -> None:  # a notification: never answered, resets the idle clock
        while not done.wait(keepalive):
            try:
                with send_lock:
                    client.send_line(_KEEPALIVE)
            except OSError:
                return

    def pump_replies() -> None:
        try:
            while True:
                line = client.read_line()
                with write_lock:
                    stdout.write(line.decode("utf-8", errors="replace") + "\n")
                    stdout.flush()
        except (OSError, Exception):  # daemon gone: the host sees stdout close
            return

    reader = threading.Thread(target=pump_replies, daemon=True)
    reader.start()
    threading.Thread(target=keep_alive, daemon=True).start()
    try:
        for line in stdin:
            if line.strip():
                with send_lock:
                    client.send_line(line.encode())
    finally:
        done.set()
    # stdin closed: give in-flight replies a moment, then end
    reader.join(timeout=2)
    return 0
