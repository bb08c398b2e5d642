"""The server's own methods (not tools): the MCP handshake, health, stats, event
subscriptions and the jobs. The dispatcher routes to them by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
import structlog
from msgspec import Raw, UnsetType

from memoryd import __version__
from memoryd.errors import Busy, BusyReason, Forbidden, InvalidParams, RpcError
from memoryd.jobs.scheduler import Scheduler
from memoryd.protocol.codec import decode_params
from memoryd.protocol.dispatch import Connection, Handler
from memoryd.protocol.tool import Tool
from memoryd.schema import Scope
from memoryd.scopes import agent_scope, earlier_agent_scope
from memoryd.server.app import App
from memoryd.tools.results import RecallResult

log = structlog.get_logger("memoryd.server")
PROTOCOL_VERSIONS = ("2025-06-18", "2025-03-26", "2024-11-05")
INSTRUCTIONS = (
    "memoryd keeps long-term memory as Markdown files. Use memory_search for exact words, "
    "memory_write to remember, memory_read/memory_update/memory_delete by id."
)


class ClientInfo(msgspec.Struct):
    name: str = ""
    version: str = ""


class InitializeParams(msgspec.Struct):
    protocolVersion: str = PROTOCOL_VERSIONS[0]
    capabilities: dict[str, Any] = {}
    clientInfo: ClientInfo | None = None
    scope: Scope | None = None  # memoryd's own: where this connection's writes go


GRAPH_NODES = 150  # graph/topics returns the largest topics, at most this many


class NoParams(msgspec.Struct):
    pass


class PromptParams(msgspec.Struct):
    name: str
    arguments: dict[str, str] = {}


# MCP's prompt: memory_recall's <memory> block, for hosts that offer prompts to the user.
MEMORY_PROMPT = {
    "name": "memory", "title": "What memoryd remembers",
    "description": "The <memory> block for a question: the memories relevant to it, "
                   "within a token budget (memory_recall).",
    "arguments": [{"name": "query", "description": "What the memories should be about.",
                   "required": True},
                  {"name": "session", "description": "A conversation whose summary and "
                   "last turns to add.", "required": False}]}


class JobRunParams(msgspec.Struct, forbid_unknown_fields=True):
    job: str
    dry_run: bool = False
    level: int | None = None


def subscriber_limit(max_connections: int) -> int:
    """How many connections may be subscribed at once: half of them (at least one)."""
    return max(1, max_connections // 2)


def server_methods(app: App, tools: Mapping[str, Tool]) -> dict[str, Handler]:
    """Every server method, bound to `app` (and its tools, for the MCP prompt)."""

    noted: set[str] = set()

    async def note_earlier_scope(name: str, scope: str) -> None:
        """Say once, in the log (the user's, not the agent's to see), where the memories
        a name wrote before names mapped one to one are, and how to move them."""
        earlier = earlier_agent_scope(name)
        if earlier == scope or earlier in noted:
            return
        try:
            held = (await app.engine.reads.counts([earlier]))["memories"]
        except RpcError:  # still starting: said at a later connection
            return
        noted.add(earlier)
        if held:
            log.warning("agent.scope_moved", name=name[:200], earlier=earlier, now=scope,
                        memories=held, then=f"stop memoryd and run: memoryd rescope "
                        f"{earlier} {scope}")

    async def initialize(raw: Raw | UnsetType, conn: Connection) -> dict[str, Any]:
        params = decode_params(raw, InitializeParams)
        if params.clientInfo is not None:  # a name, even '' or ' ', is an agent's
            conn.caller.agent = agent_scope(params.clientInfo.name)
            await note_earlier_scope(params.clientInfo.name, conn.caller.agent)
        if params.scope is not None:
            conn.caller.check(params.scope)
            conn.caller.default_scope = params.scope
        version = (params.protocolVersion if params.protocolVersion in PROTOCOL_VERSIONS
                   else PROTOCOL_VERSIONS[0])
        return {"protocolVersion": version,
                "capabilities": {"tools": {"listChanged": False},
                                 "prompts": {"listChanged": False}},
                "serverInfo": {"name": "memoryd", "version": __version__},
                "instructions": INSTRUCTIONS, "scope": conn.caller.default_scope,
                "agent": conn.caller.agent}

    async def ping(raw: Raw | UnsetType, conn: Connection) -> dict[str, Any]:
        return {}

    async def health(raw: Raw | UnsetType, conn: Connection) -> dict[str, Any]:
        decode_params(raw, NoParams)
        return app.health()

    async def stats(raw: Raw | UnsetType, conn: Connection) -> dict[str, Any]:
        decode_params(raw, NoParams)
        return {**app.health(), **await app.engine.stats(conn.caller),
                "jobs": app.scheduler.describe() if app.scheduler else []}

    def scheduler() -> Scheduler:
        if app.scheduler is None:
            raise Busy("the job scheduler is not running on this daemon",
                       {"reason": BusyReason.NO_SCHEDULER})
        return app.scheduler

    async def jobs_list(raw: Raw | UnsetType, conn: Connection) -> dict[str, Any]:
        decode_params(raw, NoParams)
        return {"jobs": scheduler().describe()}

    async def jobs_run(raw: Raw | UnsetType, conn: Connection) -> dict[str, Any]:
        params = decode_params(raw, JobRunParams)
        if not conn.caller.is_user:
            raise Forbidden("jobs act on every scope: only the user's own tooling (a "
                            "connection that does not name itself) may run them")
        report = await scheduler().run_now(params.job, params.dry_run, params.level)
        built: dict[str, Any] = msgspec.to_builtins(report)
        return built

    async def subscribe(raw: Raw | UnsetType, conn: Connection) -> dict[str, Any]:
        if conn.subscription is None:
            # A subscriber is never cut for being quiet: subscribers may hold at most half
            # of the connections, so idle listeners can never lock every client out.
            most = subscriber_limit(app.config.server.max_connections)
            if app.engine.subscription_counts()["subscribers"] >= most:
                raise Busy(f"too many subscribers ({most}, half of server.max_connections);"
                           " retry later", {"reason": BusyReason.TOO_MANY_SUBSCRIBERS})
            conn.subscription = app.engine.subscribe(conn.caller.can_see)
        return {"subscribed": True,
                "notifications": ["notifications/memory", "notifications/reminder"]}

    async def unsubscribe(raw: Raw | UnsetType, conn: Connection) -> dict[str, Any]:
        if conn.subscription is not None:
            app.engine.unsubscribe(conn.subscription)
            conn.subscription = None
        return {"subscribed": False}

    async def prompts_list(raw: Raw | UnsetType, conn: Connection) -> dict[str, Any]:
        return {"prompts": [MEMORY_PROMPT]}

    async def prompts_get(raw: Raw | UnsetType, conn: Connection) -> dict[str, Any]:
        params = decode_params(raw, PromptParams)
        if params.name != MEMORY_PROMPT["name"]:
            raise InvalidParams("name", f"no prompt {params.name!r}; prompts/list names them")
        args = params.arguments
        if not args.get("query", "").strip():
            raise InvalidParams("arguments.query", "the prompt needs a query")
        recall: dict[str, Any] = {"query": args["query"]}
        if args.get("session"):
            recall["session"] = args["session"]
        tool = tools["memory_recall"]
        block = await tool.fn(conn.caller, decode_params(
            Raw(msgspec.json.encode(recall)), tool.params, "params.arguments"))
        assert isinstance(block, RecallResult)
        return {"description": f"What memoryd remembers for: {args['query'][:80]}",
                "messages": [{"role": "user", "content": {
                    "type": "text", "text": block.text or "<memory>\n</memory>"}}]}

    async def graph_topics(raw: Raw | UnsetType, conn: Connection) -> dict[str, Any]:
        """The topic graph as the web view draws it: nodes (their episode counts) and
        co_occurs edges, of the scopes the caller may see; the largest GRAPH_NODES."""
        decode_params(raw, NoParams)
        return app.engine.graph_view(conn.caller, GRAPH_NODES)

    async def graph_links(raw: Raw | UnsetType, conn: Connection) -> dict[str, Any]:
        """The link graph of the whole store: the GRAPH_NODES most linked memories the
        caller may see, and the links between them."""
        decode_params(raw, NoParams)
        return await app.engine.reads.link_graph(conn.caller, GRAPH_NODES)

    return {"initialize": initialize, "ping": ping, "health": health, "stats": stats,
            "graph/topics": graph_topics, "graph/links": graph_links,
            "prompts/list": prompts_list, "prompts/get": prompts_get,
            "events/subscribe": subscribe, "events/unsubscribe": unsubscribe,
            "jobs/list": jobs_list, "jobs/run": jobs_run}
