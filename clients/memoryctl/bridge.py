"""Clients for agents that cannot hold a socket themselves.

`memoryctl agent`: JSON tool calls on stdin (one object or an array), results on
stdout; `{"prompt": ...}` objects and `--prompt TEXT|-` give the `<memory>` block to
put before a prompt. `memoryctl mcp`: an MCP stdio server, bridged line for line to the
daemon's socket (the daemon speaks MCP's initialize / tools/list / tools/call).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any, TextIO

from memoryd_client import Client, RpcFailure
from memoryd_client.wire import StartWait, refused_at_start


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


def _prompt_call(client: Client, prompt: Any, session: str | None = None,
                 token_budget: int | None = None) -> dict[str, Any]:
    """`{"prompt": ...}`: the recall block for that prompt (context injection)."""
    params: dict[str, Any] = {"query": prompt}
    if session:
        params["session"] = session
    if token_budget:
        params["token_budget"] = token_budget
    return _one_call(client, {"name": "memory_recall", "arguments": params})


def run_agent(client: Client, stdin: TextIO, stdout: TextIO, args: Any) -> int:
    """`memoryctl agent`: tool calls as JSON on stdin; `--prompt` prints a recall block."""
    if args.list_tools:
        json.dump(client.call("tools/list"), stdout, ensure_ascii=False, indent=2)
        stdout.write("\n")
        return 0
    if args.prompt is not None:
        prompt = stdin.read() if args.prompt == "-" else args.prompt
        if not prompt.strip():
            print("memoryctl agent: the prompt is empty", file=sys.stderr)
            return 2
        reply = _prompt_call(client, prompt.strip(), args.session, args.token_budget)
        if "error" in reply:
            print(f"memoryctl agent: {reply['error']['message']}", file=sys.stderr)
            return 1
        stdout.write(reply["result"]["text"] + "\n")
        return 0
    text = stdin.read()
    try:
        calls = json.loads(text)
    except json.JSONDecodeError as exc:
        print(f"memoryctl agent: stdin is not JSON: {exc}", file=sys.stderr)
        return 2

    def one(call: Any) -> dict[str, Any]:
        if isinstance(call, dict) and "prompt" in call:
            reply = _prompt_call(client, call["prompt"], call.get("session"),
                                 call.get("token_budget"))
            if "error" in reply:
                return {"prompt": call["prompt"], "error": reply["error"]}
            return {"prompt": call["prompt"], "memory": reply["result"]["text"],
                    "result": reply["result"]}
        return _one_call(client, call)

    if isinstance(calls, list):
        results: Any = [one(c) for c in calls]
        failed = any("error" in r for r in results)
    else:
        results = one(calls)
        failed = "error" in results
    json.dump(results, stdout, ensure_ascii=False)
    stdout.write("\n")
    return 1 if failed else 0


# The daemon closes a connection silent for `server.idle_timeout` (5 minutes by
# default); an MCP host may stay quiet for hours, so the bridge says it is alive.
KEEPALIVE_SECONDS = 60.0
DRAIN_SECONDS = 30.0  # after the host closes stdin, replies still owed may take this long
_KEEPALIVE = b'{"jsonrpc": "2.0", "method": "notifications/keepalive"}'


def _message(line: bytes) -> dict[str, Any] | None:
    """A line's JSON object with an id, or None."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) and "id" in message else None


def _request_of(line: bytes) -> tuple[Any, str | None, Any]:
    """(id, method, params) of a request line; (None, None, None) when it has no id."""
    message = _message(line)
    if message is None:
        return None, None, None
    return message["id"], message.get("method"), message.get("params")


def run_mcp(client: Client, stdin: TextIO, stdout: TextIO,
            keepalive: float = KEEPALIVE_SECONDS) -> int:
    """Copy stdin lines to the socket and socket lines to stdout until stdin closes.

    When the daemon restarts, the requests still waiting are answered with an error
    (the host may retry), and the bridge reconnects, replaying the host's `initialize`
    so the connection keeps the agent's identity and scope. A request that a starting
    daemon answers busy is sent again after a pause (the client's `start_wait` in all),
    so the host sees the answer, not the start."""
    write_lock = threading.Lock()
    send_lock = threading.Lock()
    done = threading.Event()
    waiting: dict[Any, bytes] = {}  # ids sent and not yet answered: their request lines
    starts: dict[Any, StartWait] = {}  # requests a starting daemon refused
    client.retries = max(client.retries, 8)  # reconnections wait up to ~20 s in all

    def write(message: bytes) -> None:
        with write_lock:
            stdout.write(message.decode("utf-8", errors="replace") + "\n")
            stdout.flush()

    def keep_alive() -> None:  # a notification: never answered, resets the idle clock
        while not done.wait(keepalive):
            try:
                with send_lock:
                    client.send_line(_KEEPALIVE, reconnect=False)
            except OSError:
                continue  # the pump reconnects

    def lost() -> None:
        for request_id in list(waiting):
            waiting.pop(request_id, None)
            write(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {
                "code": -32000, "message": "memoryd went away while answering this "
                "request; it may or may not have taken effect"}}).encode())

    def send_again(line: bytes) -> None:
        try:
            with send_lock:
                client.send_line(line, reconnect=False)
        except OSError:
            lost()

    def held_back(request_id: Any, line: bytes) -> bool:
        """Whether this reply says the daemon is starting and its request goes again."""
        failure = refused_at_start(_message(line))
        if failure is None or request_id not in waiting:
            starts.pop(request_id, None)
            return False
        wait = starts.setdefault(request_id, StartWait(client.start_wait))
        try:
            pause = wait.pause(failure)
        except RpcFailure:
            starts.pop(request_id, None)
            return False  # waited long enough: the host sees the busy answer
        timer = threading.Timer(pause, send_again, (waiting[request_id],))
        timer.daemon = True
        timer.start()
        return True

    def pump_replies() -> None:
        while True:
            try:
                line = client.read_line()
            except OSError:  # the daemon went away (or restarts)
                lost()
                try:
                    with send_lock:
                        client.close()
                        client.send_line(_KEEPALIVE)  # reconnects, with backoff
                except OSError:
                    return  # it stays away: the host sees no more replies
                continue
            request_id, _, _ = _request_of(line)
            if held_back(request_id, line):
                continue
            waiting.pop(request_id, None)
            write(line)

    reader = threading.Thread(target=pump_replies, daemon=True)
    reader.start()
    threading.Thread(target=keep_alive, daemon=True).start()
    try:
        for text in stdin:
            if not text.strip():
                continue
            line = text.encode()
            request_id, method, params = _request_of(line)
            if method == "initialize" and isinstance(params, dict):
                client.reinitialize = params  # replayed on every reconnection
            if request_id is not None:
                waiting[request_id] = line
            try:
                with send_lock:
                    client.send_line(line, reconnect=False)
            except OSError:
                lost()
    finally:
        done.set()
    # stdin closed: let the replies still owed arrive (for a while), then end
    deadline = time.monotonic() + DRAIN_SECONDS
    while waiting and reader.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    return 0
