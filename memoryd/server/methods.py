"""The server's own methods (not tools): the MCP handshake, health, stats, event
subscriptions and the jobs. The dispatcher routes to them by name."""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import Raw, UnsetType

from memoryd import __version__
from memoryd.errors import Busy, Forbidden
from memoryd.jobs.scheduler import Scheduler
from memoryd.protocol.codec import decode_params
from memoryd.protocol.dispatch import Connection, Handler
from memoryd.schema import Scope
from memoryd.scopes import agent_scope
from memoryd.server.app import App

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


class NoParams(msgspec.Struct):
    pass


class JobRunParams(msgspec.Struct, forbid_unknown_fields=True):
    job: str
    dry_run: bool = False
    level: int | None = None


def server_methods(app: App) -> dict[str, Handler]:
    """Every server method, bound to `app`."""

    async def initialize(raw: Raw | UnsetType, conn: Connection) -> dict[str, Any]:
        params = decode_params(raw, InitializeParams)
        if params.clientInfo is not None:
            conn.client_info = msgspec.to_builtins(params.clientInfo)
            if params.clientInfo.name.strip():
                conn.caller.agent = agent_scope(params.clientInfo.name)
        if params.scope is not None:
            conn.caller.check(params.scope)
            conn.caller.default_scope = params.scope
        version = (params.protocolVersion if params.protocolVersion in PROTOCOL_VERSIONS
                   else PROTOCOL_VERSIONS[0])
        return {"protocolVersion": version, "capabilities": {"tools": {"listChanged": False}},
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
        engine = app.engine
        llm = engine.llm
        caller = conn.caller
        rejected = engine.sync.rejected.describe()
        if not caller.is_user:  # an agent sees its own scopes' figures, no paths
            rejected = {"count": rejected["count"]}
        return {**await engine.reads.counts(caller.visible_scopes(None)),
                "rejected_files": rejected,
                "pending_access_counts": len(engine.access_counts.dirty),
                # Turns still waiting for importance, facts or a summary: wait for 0.
                "backlog": await engine.conversation.backlog(),
                "graph": engine.graph.describe(),
                "llm": {"endpoint": llm.endpoint, "calls": llm.calls, "failures": llm.failures}
                if llm else None,
                "subscribers": engine.events.subscribers, **app.health()}

    def scheduler() -> Scheduler:
        if app.scheduler is None:
            raise Busy("the job scheduler is not running on this daemon")
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
        return msgspec.to_builtins(report)

    async def subscribe(raw: Raw | UnsetType, conn: Connection) -> dict[str, Any]:
        if conn.subscription is None:
            conn.subscription = app.engine.events.subscribe(conn.caller.can_see)
        return {"subscribed": True,
                "notifications": ["notifications/memory", "notifications/reminder"]}

    async def unsubscribe(raw: Raw | UnsetType, conn: Connection) -> dict[str, Any]:
        if conn.subscription is not None:
            app.engine.events.unsubscribe(conn.subscription)
            conn.subscription = None
        return {"subscribed": False}

    return {"initialize": initialize, "ping": ping, "health": health, "stats": stats,
            "events/subscribe": subscribe, "events/unsubscribe": unsubscribe,
            "jobs/list": jobs_list, "jobs/run": jobs_run}
