"""Dispatcher: request lines in, reply lines (or nothing) out.

Each line is decoded and routed once: to a server method (passed in by the server),
to a tool (`tools/call`, or the tool's own name as shorthand), or to an error. The
params are decoded against the tool's Struct and every failure becomes a JSON-RPC
error at this one boundary. Consecutive pipelined calls of a batchable tool
(memory_write) run as one batch: one group commit. Knows no sockets and no engine:
tests drive it with bytes and any handlers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import msgspec
import structlog
from msgspec import UNSET, Raw, UnsetType

from memoryd.errors import InvalidRequest, MethodNotFound, RpcError
from memoryd.events import Subscription
from memoryd.protocol.codec import (
    Request,
    best_effort_id,
    decode_params,
    decode_request,
    encode_error,
    encode_json,
    encode_result,
)
from memoryd.protocol.progress import Progress, Send, token_of
from memoryd.protocol.tool import Tool
from memoryd.scopes import Caller

log = structlog.get_logger("memoryd.protocol")


class Connection:
    """One client connection's protocol state: who the caller is, what it asked for."""

    def __init__(self, peer_pid: int | None = None) -> None:
        self.caller = Caller()
        self.subscription: Subscription | None = None
        self.peer_pid = peer_pid
        # Pushes a notification to this client now (set by the server; progress).
        self.send: Send | None = None


Handler = Callable[[Raw | UnsetType, Connection], Awaitable[Any]]
Emit = Callable[[list[bytes]], Awaitable[None]]  # replies, ready to go out in order


class CallParams(msgspec.Struct):
    name: str
    arguments: Raw | UnsetType = UNSET
    params: Raw | UnsetType = UNSET
    meta: Any = msgspec.field(default=None, name="_meta")


def _internal_error() -> RpcError:
    return RpcError("internal error: the daemon failed to handle this request; see its log")


def _mcp_result(result: dict[str, Any]) -> dict[str, Any]:
    """An MCP CallToolResult around a tool's own result."""
    return {"content": [{"type": "text", "text": encode_json(result).decode()}],
            "structuredContent": result, "isError": False}


def _mcp_error(error: RpcError) -> dict[str, Any]:
    """An MCP CallToolResult for a tool call that failed: the message, and the JSON-RPC
    error it would have been, for programs."""
    text = f"{error.message} (error {error.code})"
    return {"content": [{"type": "text", "text": text}], "isError": True,
            "_meta": {"memoryd/error": {"code": error.code, "message": error.message,
                                         **({"data": error.data} if error.data is not None
                                            else {})}}}


def _split_meta(raw: Raw | UnsetType) -> tuple[Raw | UnsetType, str | int | None]:
    """A tool's params without the `_meta` a caller may put there (the shorthand
    form), and the progressToken it carried."""
    if raw is UNSET or b'"_meta"' not in bytes(raw):
        return raw, None
    try:
        params = msgspec.json.decode(bytes(raw))
    except msgspec.DecodeError:
        return raw, None  # decode_params reports it
    if not isinstance(params, dict):
        return raw, None
    meta = params.pop("_meta", None)
    return Raw(msgspec.json.encode(params)), token_of(meta)


@dataclass
class _Call:
    """A decoded, routed request: a tool call, a server method, or a routing error."""

    request: Request
    tool: Tool | None = None
    raw: Raw | UnsetType = UNSET
    prefix: str = "params"
    mcp: bool = False  # a tools/call: the result is wrapped as MCP's CallToolResult
    error: RpcError | None = None
    progress_token: str | int | None = None
    # Decoded ahead of its turn (`Dispatcher.prepare`), and the work its tool's
    # `prepare` started for it, carried to the batch that runs it.
    params: Any = UNSET
    early: Any = None

    def reply(self, outcome: Any) -> bytes | None:
        if self.request.is_notification:
            return None
        if isinstance(outcome, RpcError) and self.mcp and self.tool is not None:
            # MCP: a tool that ran and failed (bad arguments, not found, busy) answers
            # a CallToolResult with isError, which the model reads and can act on.
            return encode_result(self.request.reply_id, _mcp_error(outcome))
        if isinstance(outcome, RpcError):
            return encode_error(self.request.reply_id, outcome)
        return encode_result(self.request.reply_id, _mcp_result(outcome) if self.mcp
                             else outcome)


# A line routed: its call, or the error reply it gets already encoded.
Routed = _Call | bytes


class Dispatcher:
    def __init__(self, tools: Mapping[str, Tool], methods: Mapping[str, Handler],
                 on_requests: Callable[[int], None] = lambda n: None,
                 gate: Callable[[str], RpcError | None] = lambda name: None) -> None:
        self.tools = tools
        self.methods = dict(methods)
        self.on_requests = on_requests  # the server counts requests (idle detection)
        self.gate = gate  # a tool or method refused for now (busy while rebuilding)

    @cached_property
    def _tools_list(self) -> dict[str, Any]:
        """Made at the first `tools/list` (about 13 ms of JSON schemas), then kept."""
        return {"tools": [t.spec.describe() for t in self.tools.values()]}

    async def handle(self, line: bytes, conn: Connection) -> bytes | None:
        """Answer one request line; None for a notification (never answered)."""
        replies = await self.handle_many([line], conn)
        return replies[0] if replies else None

    async def handle_many(self, lines: list[bytes], conn: Connection,
                          emit: Emit | None = None,
                          ahead: list[Routed] | None = None) -> list[bytes]:
        """Answer lines in order; a run of consecutive batchable tool calls is one batch.
        With `emit`, each call's (or batch's) replies go to it before the next call runs,
        and none are returned: a connection sends them as they come, so what one chunk of
        requests asks for is never all held at once. `ahead`: the lines as `prepare`
        routed them (each is then routed and decoded once)."""
        self.on_requests(len(lines))
        collected: list[bytes] = []

        async def put(replies: list[bytes | None]) -> None:
            ready = [r for r in replies if r is not None]
            if emit is None:
                collected.extend(ready)
            elif ready:
                await emit(ready)

        run: list[_Call] = []
        for n, line in enumerate(lines):
            try:
                routed = self._gated(ahead[n] if ahead is not None else self._route_line(line))
            except Exception:  # a bug of ours answers this line only, never the burst
                log.exception("request.unroutable")
                routed = encode_error(best_effort_id(line), _internal_error())
            if isinstance(routed, _Call) and self._batchable(routed) and (
                    not run or run[0].tool is routed.tool):
                run.append(routed)
                continue
            await put(await self._run_batch(run, conn))
            run = []
            if isinstance(routed, _Call):
                if self._batchable(routed):
                    run = [routed]
                else:
                    await put([await self._run_one(routed, conn)])
            else:
                await put([routed])
        await put(await self._run_batch(run, conn))
        return collected

    def prepare(self, lines: list[bytes], conn: Connection) -> list[Routed] | None:
        """Lines received while earlier ones still run: each is routed now, and each run
        of calls to a tool that prepares (memory_write) is decoded and starts its early
        work (`Tool.prepare`), which the call carries to its batch. Handed back to
        `handle_many` as `ahead`; the gate is asked again when a call's turn comes.
        Without effect but speed: None when preparing failed (a bug of ours), and the
        lines are then routed in their turn."""
        try:
            routed = [self._route_line(line) for line in lines]
            run: list[_Call] = []
            for call in routed:
                if not isinstance(call, _Call) or call.tool is None \
                        or call.tool.prepare is None or call.error is not None:
                    continue
                tool = call.tool
                if self.gate(tool.name) is not None:
                    continue
                try:
                    call.params = decode_params(call.raw, tool.params, call.prefix)
                except RpcError:
                    continue  # answered in its turn, decoded again
                if run and run[0].tool is not tool:
                    self._prepare_run(run, conn)
                    run = []
                run.append(call)
            if run:
                self._prepare_run(run, conn)
            return routed
        except Exception:  # a bug of ours costs the head start, never a request
            log.exception("request.prepare_failed")
            return None

    @staticmethod
    def _prepare_run(run: list[_Call], conn: Connection) -> None:
        tool = run[0].tool
        assert tool is not None and tool.prepare is not None
        for call, early in zip(run, tool.prepare(conn.caller, [c.params for c in run]),
                               strict=True):
            call.early = early

    # -- routing ---------------------------------------------------------------------
    def _gated(self, routed: Routed) -> Routed:
        """A call the gate refuses now (busy while rebuilding) carries its error."""
        if isinstance(routed, _Call) and routed.error is None:
            name = routed.tool.name if routed.tool is not None else routed.request.method
            refused = self.gate(name)
            if refused is not None:
                routed.error = refused
        return routed

    def _route_line(self, line: bytes) -> _Call | bytes:
        try:
            request = decode_request(line)
        except InvalidRequest as exc:
            return encode_error(best_effort_id(line), exc)
        except RpcError as exc:
            return encode_error(None, exc)
        method = request.method
        if method == "tools/call":
            try:
                call = decode_params(request.params, CallParams)
            except RpcError as exc:
                return _Call(request, error=exc)
            tool = self.tools.get(call.name)
            if tool is None:
                return _Call(request, error=MethodNotFound(
                    f"unknown tool {call.name!r}; `tools/list` names the tools"))
            token = token_of(call.meta)
            if call.arguments is not UNSET:  # `params` is accepted for `arguments` too
                return _Call(request, tool, call.arguments, "params.arguments", mcp=True,
                             progress_token=token)
            return _Call(request, tool, call.params, "params.params", mcp=True,
                         progress_token=token)
        if method == "tools/list" or method in self.methods or method.startswith(
                "notifications/"):
            return _Call(request, raw=request.params)
        tool = self.tools.get(method)
        if tool is None:
            return _Call(request, error=MethodNotFound(
                f"unknown method or tool {method!r}; `tools/list` names the tools"))
        return _Call(request, tool, request.params)

    @staticmethod
    def _batchable(call: _Call) -> bool:
        return call.error is None and call.tool is not None and call.tool.batch is not None

    # -- running ---------------------------------------------------------------------
    async def _run_one(self, call: _Call, conn: Connection) -> bytes | None:
        try:
            if call.error is not None:
                raise call.error
            result = await self._execute(call, conn)
        except RpcError as exc:
            return call.reply(exc)
        except Exception:
            log.exception("request.failed", method=call.request.method)
            return call.reply(_internal_error())
        return call.reply(result)

    async def _execute(self, call: _Call, conn: Connection) -> Any:
        if call.tool is not None:
            if call.tool.batch is not None:  # a batch of one: it takes what was prepared
                (result,) = await call.tool.batch(conn.caller, [self._params(call)],
                                                  [call.early])
                if isinstance(result, RpcError):
                    raise result
                return result
            if call.tool.spec.progress:
                raw, token = _split_meta(call.raw)
                args: Any = decode_params(raw, call.tool.params, call.prefix)
                progress = Progress(conn.send, token if call.progress_token is None
                                    else call.progress_token)
                return await call.tool.fn(conn.caller, args, progress=progress)
            return await call.tool.fn(conn.caller,
                                      decode_params(call.raw, call.tool.params, call.prefix))
        method = call.request.method
        if method == "tools/list":
            return self._tools_list
        handler = self.methods.get(method)
        if handler is None:
            return None  # client notifications (initialized, cancelled...) need no action
        return await handler(call.raw, conn)

    @staticmethod
    def _params(call: _Call) -> Any:
        """The call's params, decoded once (ahead of its turn, or now)."""
        assert call.tool is not None
        if call.params is UNSET:
            call.params = decode_params(call.raw, call.tool.params, call.prefix)
        return call.params

    async def _run_batch(self, run: list[_Call], conn: Connection) -> list[bytes | None]:
        if len(run) < 2:
            return [await self._run_one(call, conn) for call in run]
        tool = run[0].tool
        assert tool is not None and tool.batch is not None
        outcomes: list[Any] = []
        valid: list[Any] = []
        early: list[Any] = []
        for call in run:
            try:
                valid.append(self._params(call))
                early.append(call.early)
                outcomes.append(None)
            except RpcError as exc:
                outcomes.append(exc)
        try:
            results = iter(await tool.batch(conn.caller, valid, early) if valid else [])
        except RpcError as exc:  # the whole batch failed as one (a full disk)
            results = iter([exc] * len(valid))
        except Exception:
            log.exception("request.failed", method=tool.name, batch=len(valid))
            results = iter([_internal_error()] * len(valid))
        return [call.reply(next(results) if outcome is None else outcome)
                for call, outcome in zip(run, outcomes, strict=True)]
