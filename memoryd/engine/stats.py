"""What `stats` reports of the engine: counts, the conversation backlog, the models and
the LLM, reminders, git and subscribers; paths and file names, and what the daemon's
memory holds (footprint.py), only to the user's own tooling (a caller that named no
agent)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memoryd.engine import footprint
from memoryd.scopes import Caller

if TYPE_CHECKING:
    from memoryd.engine import Engine


async def describe(engine: Engine, caller: Caller) -> dict[str, Any]:
    rejected = engine.sync.rejected.describe()
    if not caller.is_user:  # an agent sees its own scopes' figures, no paths
        rejected = {"count": rejected["count"]}
    out = {**await engine.reads.counts(caller.visible_scopes(None)),
           "rejected_files": rejected,
           "pending_access_counts": len(engine.stores.access_counts.dirty),
           # Turns still waiting for importance, facts or a summary: wait for 0.
           "backlog": await engine.learning.backlog(),
           # Of those, turns whose processing failed and waits to be tried again, and
           # turns settled without it after the last try (since start).
           "failed_turns": {"retrying": engine.learning.failed,
                            "given_up": engine.learning.given_up},
           "graph": engine.graph.describe(),
           # Secrets cut out of texts before they were written, by rule, since start.
           "redacted": engine.stores.redactor.counts(),
           "models": await _models(engine, caller),
           "llm": _llm(engine),
           "reminders": await engine.reads.reminders(caller),
           "git": engine.git.describe() if engine.git else {"enabled": False},
           "sync": _sync(engine, caller),
           **engine.subscription_counts()}
    if caller.is_user:  # counts every file and every memory: the user's own tooling only
        out["index"] = await engine.sync.index_health()
        out["memory"] = await footprint.describe(engine)
    return out


async def _models(engine: Engine, caller: Caller) -> dict[str, Any]:
    embedder = {k: v for k, v in engine.embedder.describe().items()
                if caller.is_user or k != "file"}
    reranker = None
    if engine.reranker is not None:
        reranker = ({"model": engine.config.reranker.model_dir} if caller.is_user
                    else {"configured": True})
    return {"embedder": embedder, "reranker": reranker, "scoring": await engine.scoring()}


# What an agent sees of the last sync: how it went, never which files (a path is a
# title, and another agent's private memory's title says what it holds).
_SYNC_COUNTS = ("at", "dry_run", "came_in", "went_out", "error", "duration_ms")


def _sync(engine: Engine, caller: Caller) -> dict[str, Any]:
    if engine.remote is None:
        return {"remote": None}
    described = engine.remote.describe()
    if caller.is_user:
        return described
    last = described.get("last") or None
    return {"remote": described["remote"], "branch": described["branch"],
            "failures": described["failures"], "retry_at": described["retry_at"],
            "last_ok": described["last_ok"], "conflicts": len(described["conflicts"]),
            "last": last and {**{k: last.get(k) for k in _SYNC_COUNTS},
                              **{k: len(last.get(k) or []) for k in
                                 ("resolved", "needs_you", "refused")}}}


def _llm(engine: Engine) -> dict[str, Any]:
    llm = engine.llm
    if llm is None:
        return {"configured": False}
    return {"configured": True, "endpoint": llm.endpoint, "model": llm.config.model,
            "calls": llm.calls, "failures": llm.failures, "last_error": llm.last_error}
