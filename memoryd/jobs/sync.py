"""sync: with `git.remote` set, commit, fetch, merge and push (engine/remote.py).

Without a remote (or with the git history off) a run does nothing. A failed sync
(an unreachable or refusing remote) fails the run with its reason; the engine backs
off before the scheduled runs after it try again."""

from __future__ import annotations

from datetime import datetime

from memoryd.jobs.needs import JobEngine
from memoryd.jobs.report import Change


class SyncFailed(Exception):
    pass


async def run(engine: JobEngine, now: datetime, dry_run: bool) -> list[Change]:
    if not engine.config.git.remote or engine.config.git.enabled is False:
        return []
    result = await engine.sync_remote(dry_run=dry_run, scheduled=True)
    if result.get("error"):
        raise SyncFailed(result["error"])
    changes = [Change(id=r["id"], action="resolved", path=r["path"],
                      after={"rule": r["rule"], **({"winner": r["winner"]} if "winner" in r
                                                   else {})})
               for r in result.get("resolved", [])]
    changes += [Change(id="", action=action, path=n["path"], after={"reason": n["reason"]})
                for action, key in (("needs-you", "needs_you"), ("refused", "refused"))
                for n in result.get(key, [])]
    changes += [Change(id="", action="came-in", path=p) for p in result.get("paths_in", [])]
    return changes
