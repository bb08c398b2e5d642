"""Dispatcher: one request line in, one reply line (or nothing) out.

Decodes the envelope, routes the method (server methods, `tools/call`, or a
tool's own name as shorthand), decodes the params against the tool's Struct and
translates every failure to a JSON-RPC error at this one boundary. Knows no
sockets: tests drive it with bytes.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import msgspec
import structlog
from msgspec import UNSET, Raw, UnsetType

from memoryd import __version__
from memoryd.access import Caller, agent_scope
from memoryd.app import App
from memoryd.errors import Busy, InvalidRequest, MethodNotFound, RpcError
from memoryd.events import Subscription
from memoryd.jobs.scheduler import Scheduler
from memoryd.protocol.codec import (
    Request,
    best_effort_id,
    decode_params,
    decode_request,
    encode_error,
    encode_json,
    encode_result,
)
from memoryd.tools.registry import Tool

log = structlog.get_logger("memoryd.protocol")

PROTOCOL_VERSIONS = ("2025-06-18", "2025-03-26", "2024-11-05")
INSTRUCTIONS = (
    "memoryd keeps long-term memory as Markdown files. Use memory_search for exact words, "
    "memory_write to remember, memory_read/memory_update/memory_delete by id."
)


class Session:
    """Per-connection state: who the caller is and whether it subscribed to events."""

    def __init__(self, peer_pid: int | None = None) -> None:
        self.caller = Caller()
        self.client_info: dict[str, Any] | None = None
        self.subscription: Subscription | None = None
        self.peer_pid = peer_pid


class ClientInfo(msgspec.Struct):
    name: str = ""
    version: str = ""


class InitializeParams(msgspec.Struct):
    protocolVersion: str = PROTOCOL_VERSIONS[0]
    capabilities: dict[str, Any] = {}
    clientInfo: ClientInfo | None = None


class CallParams(msgspec.Struct):
    name: str
    arguments: Raw | UnsetType = UNSET
    params: Raw | UnsetType = UNSET


class NoParams(msgspec.Struct):
    pass


class JobRunParams(msgspec.Struct, forbid_unknown_fields=True):
    job: str
    dry_run: bool = False
    level: int | None = None


Handler = Callable[[Raw | UnsetType, Session], Awaitable[Any]]


def _call_arguments(call: CallParams) -> tuple[Raw | UnsetType, str]:
    """A tools/call's arguments (`params` is accepted too) and where errors point."""
    if call.arguments is not UNSET:
        return call.arguments, "params.arguments"
    return call.params, "params.params"


def _mcp_result(result: dict[str, Any]) -> dict[str, Any]:
    """An MCP CallToolResult around a tool's own result."""
    return {"content": [{"type": "text", "text": encode_json(result).decode()}],
            "structuredContent": result, "isError": False}


@dataclass
class _Batched:
    line: bytes
    request: Request
    tool: Tool
    raw: Raw | UnsetType
    prefix: str
    mcp: bool


class Dispatcher:
    def __init__(self, app: App, tools: dict[str, Tool]) -> None:
        self.app = app
        self.tools = tools
        self.methods: dict[str, Handler] = {
            "initialize": self._initialize,
            "ping": self._ping,
            "tools/list": self._tools_list,
            "tools/call": self._tools_call,
            "health": self._health,
            "stats": self._stats,
            "events/subscribe": self._subscribe,
            "events/unsubscribe": self._unsubscribe,
            "jobs/list": self._jobs_list,
            "jobs/run": self._jobs_run,
        }
        self._tools_list_result = {"tools": [t.describe() for t in tools.values()]}

    async def handle(self, line: bytes, session: Session) -> bytes | None:
        """Answer one request line; None for a notification (never answered)."""
        self.app.requests += 1
        self.app.last_request = time.monotonic()
        try:
            request = decode_request(line)
        except InvalidRequest as exc:
            return encode_error(best_effort_id(line), exc)
        except RpcError as exc:
            return encode_error(None, exc)
        try:
            result = await self._call(request.method, request.params, session)
        except RpcError as exc:
            return None if request.is_notification else encode_error(request.reply_id, exc)
        except Exception:
            log.exception("request.failed", method=request.method)
            if request.is_notification:
                return None
            return encode_error(request.reply_id, RpcError(
                "internal error: the daemon failed to handle this request; see its log"))
        return None if request.is_notification else encode_result(request.reply_id, result)

    async def handle_many(self, lines: list[bytes], session: Session) -> list[bytes]:
        """Answer lines in order; consecutive calls of a batchable tool (memory_write)
        run as one batch, so a pipelined burst of writes is one group commit."""
        replies: list[bytes] = []
        run: list[_Batched] = []
        for line in lines:
            item = self._batchable(line)
            if item is not None and (not run or run[0].tool is item.tool):
                run.append(item)
                continue
            replies.extend(await self._run_batch(run, session))
            run = [item] if item is not None else []
            if item is None:
                reply = await self.handle(line, session)
                if reply is not None:
                    replies.append(reply)
        replies.extend(await self._run_batch(run, session))
        return replies

    def _batchable(self, line: bytes) -> _Batched | None:
        try:
            request = decode_request(line)
            if request.method == "tools/call":
                call = decode_params(request.params, CallParams)
                tool, mcp = self.tools.get(call.name), True
                raw, prefix = _call_arguments(call)
            else:
                tool, mcp = self.tools.get(request.method), False
                raw, prefix = request.params, "params"
        except RpcError:
            return None
        if tool is None or tool.batch is None:
            return None
        return _Batched(line, request, tool, raw, prefix, mcp)

    async def _run_batch(self, run: list[_Batched], session: Session) -> list[bytes]:
        if len(run) < 2:
            replies = [await self.handle(item.line, session) for item in run]
            return [r for r in replies if r is not None]
        self.app.requests += len(run)
        self.app.last_request = time.monotonic()
        outcomes: list[Any] = []
        valid: list[Any] = []
        for item in run:
            try:
                valid.append(decode_params(item.raw, item.tool.params, item.prefix))
                outcomes.append(None)
            except RpcError as exc:
                outcomes.append(exc)
        tool = run[0].tool
        assert tool.batch is not None
        try:
            results = iter(await tool.batch(self.app, session.caller, valid) if valid else [])
        except Exception:
            log.exception("request.failed", method=tool.name, batch=len(valid))
            failure = RpcError("internal error: the daemon failed to handle this request; "
                               "see its log")
            results = iter([failure] * len(valid))
        replies: list[bytes] = []
        for item, outcome in zip(run, outcomes, strict=True):
            result = next(results) if outcome is None else outcome
            if item.request.is_notification:
                continue
            if isinstance(result, RpcError):
                replies.append(encode_error(item.request.reply_id, result))
            else:
                replies.append(encode_result(item.request.reply_id,
                                             _mcp_result(result) if item.mcp else result))
        return replies

    async def _call(self, method: str, params: Raw | UnsetType, session: Session) -> Any:
        handler = self.methods.get(method)
        if handler is not None:
            return await handler(params, session)
        if method.startswith("notifications/"):
            return None  # client notifications (initialized, cancelled...) need no action
        tool = self.tools.get(method)
        if tool is None:
            raise MethodNotFound(f"unknown method or tool {method!r}; "
                                 "`tools/list` names the tools")
        return await self.run_tool(tool, params, session, "params")

    async def run_tool(self, tool: Tool, raw: Raw | UnsetType, session: Session,
                       prefix: str) -> dict[str, Any]:
        args = decode_params(raw, tool.params, prefix)
        return await tool.fn(self.app, session.caller, args)

    # -- server methods ---------------------------------------------------------
    async def _initialize(self, raw: Raw | UnsetType, session: Session) -> dict[str, Any]:
        params = decode_params(raw, InitializeParams)
        if params.clientInfo is not None:
            session.client_info = msgspec.to_builtins(params.clientInfo)
            if params.clientInfo.name:
                session.caller.agent = agent_scope(params.clientInfo.name)
        version = (params.protocolVersion if params.protocolVersion in PROTOCOL_VERSIONS
                   else PROTOCOL_VERSIONS[0])
        return {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "memoryd", "version": __version__},
            "instructions": INSTRUCTIONS,
            "scope": session.caller.default_scope,
        }

    async def _ping(self, raw: Raw | UnsetType, session: Session) -> dict[str, Any]:
        return {}

    async def _tools_list(self, raw: Raw | UnsetType, session: Session) -> dict[str, Any]:
        return self._tools_list_result

    async def _tools_call(self, raw: Raw | UnsetType, session: Session) -> dict[str, Any]:
        call = decode_params(raw, CallParams)
        tool = self.tools.get(call.name)
        if tool is None:
            raise MethodNotFound(f"unknown tool {call.name!r}; `tools/list` names the tools")
        arguments, prefix = _call_arguments(call)
        return _mcp_result(await self.run_tool(tool, arguments, session, prefix))

    async def _health(self, raw: Raw | UnsetType, session: Session) -> dict[str, Any]:
        decode_params(raw, NoParams)
        return self.app.health()

    async def _stats(self, raw: Raw | UnsetType, session: Session) -> dict[str, Any]:
        decode_params(raw, NoParams)
        engine = self.app.engine
        counts = await engine.counts()
        llm = engine.llm
        return {**counts, "pending_access_counts": len(engine.stats.dirty),
                "graph": engine.graph.describe(),
                "llm": {"endpoint": llm.endpoint, "calls": llm.calls, "failures": llm.failures}
                if llm else None,
                "subscribers": engine.events.subscribers, **self.app.health()}

    def _scheduler(self) -> Scheduler:
        if self.app.scheduler is None:
            raise Busy("the job scheduler is not running on this daemon")
        return self.app.scheduler

    async def _jobs_list(self, raw: Raw | UnsetType, session: Session) -> dict[str, Any]:
        decode_params(raw, NoParams)
        return {"jobs": self._scheduler().describe()}

    async def _jobs_run(self, raw: Raw | UnsetType, session: Session) -> dict[str, Any]:
        params = decode_params(raw, JobRunParams)
        report = await self._scheduler().run_now(params.job, params.dry_run, params.level)
        return msgspec.to_builtins(report)

    async def _subscribe(self, raw: Raw | UnsetType, session: Session) -> dict[str, Any]:
        if session.subscription is None:
            session.subscription = self.app.engine.events.subscribe(session.caller.can_see)
        return {"subscribed": True,
                "notifications": ["notifications/memory", "notifications/reminder"]}

    async def _unsubscribe(self, raw: Raw | UnsetType, session: Session) -> dict[str, Any]:
        if session.subscription is not None:
            self.app.engine.events.unsubscribe(session.subscription)
            session.subscription = None
        return {"subscribed": False}
