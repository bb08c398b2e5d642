"""The job table: the one definition of every background job.

Stdlib only and importing nothing of memoryd's: the config (`jobs.<name>` keys and
their defaults), the scheduler, memoryctl and docs/jobs.md's job table all read it.
Adding a job means its module under jobs/ (with `run(engine, now, dry_run)`) and a
row here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JobSpec:
    name: str
    module: str  # memoryd.jobs.<module> holds `async def run(engine, now, dry_run, ...)`
    default: str | None  # an interval ("10m") or a crontab line; None: runs when idle
    summary: str

    @property
    def config_key(self) -> str:
        """Its key under `jobs:` in config.yaml."""
        return self.name.replace("-", "_")


JOBS: tuple[JobSpec, ...] = (
    JobSpec("expire", "expire", "1h", "inbox memories past their TTL go to the trash"),
    JobSpec("decay", "decay", "17 3 * * *",
            "organized notes never accessed for 30 days go to the trash"),
    JobSpec("upgrade", "upgrade", "10m",
            "inbox memories accessed 3 times or more become organized"),
    JobSpec("consolidate", "consolidate", "1h",
            "duplicates merge into the most-accessed one; memory.md is rewritten"),
    JobSpec("decay-sweep", "decay_sweep", "5m",
            "cold conversation turns become episodes in the topic graph"),
    JobSpec("notify", "notify", "1m", "due reminders are announced once"),
    JobSpec("compress", "compress", "1h",
            "a scope's oldest sessions fold into summary memories past compression.threshold"),
    JobSpec("sync", "sync", "5m",
            "with git.remote set: commit, fetch, merge and push (also soon after writes)"),
    JobSpec("dream", "dream", None, "tidies memory while nobody asks anything"),
)
SCHEDULED: tuple[JobSpec, ...] = tuple(j for j in JOBS if j.default is not None)
