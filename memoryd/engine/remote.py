"""Sync: one memory on every machine, through a git remote the user already has.

A sync commits what this machine wrote, fetches the remote's branch, merges it
(history/plan.py: a merge that knows memories, computed in git's object store), writes
the files the merge changed under the root, moves HEAD, re-reads those files into the
indexes, and pushes. A push refused because the remote moved on starts again from the
fetch (at most ATTEMPTS times); nothing is ever force-pushed.

While the merge is computed, written and indexed, changes wait (Workers.exclusive): no
write lands between the commit and the files the merge replaces, and no hand-edit
event for a merged file is indexed before the merge indexes it (as an edit, keeping a
second copy of a version the merge brought). Searches and reads answer throughout; the
fetch and the push (the slow, networked parts) hold nothing.

A kill at any moment leaves a root the next start makes clean: until the journal
(`.git/memoryd-sync.json`, written before the first file) is removed, HEAD has not
moved, and `recover` writes the merge's files again and moves HEAD. The fetch and the
push change refs only, each atomically.

A remote that cannot be reached, refuses us, or gives no answer within
`git.sync_timeout` is a failure with its reason, in the result and in `stats`; the
scheduled sync then backs off (BACKOFF_FIRST, doubling, up to BACKOFF_MAX).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog
import trio

from memoryd.config import GitConfig
from memoryd.engine.stores import Stores
from memoryd.engine.sync import FileSync
from memoryd.errors import InvalidParams
from memoryd.history import merge
from memoryd.history.git import GitHistory
from memoryd.history.plan import Planner, diff, empty_tree, refusal, write_tree
from memoryd.history.purge import pending as purged_head
from memoryd.history.purge import settled as purge_settled
from memoryd.history.remote import (
    RemoteError,
    default_branch,
    fetch,
    push,
    remote_head,
    shown,
)
from memoryd.history.runner import GitError, blobs, git, head_of

log = structlog.get_logger("memoryd.sync")
ATTEMPTS = 4  # fetch-merge-push rounds before a moving remote is reported
BACKOFF_FIRST = 60.0
BACKOFF_MAX = 3600.0
SHOWN = 50  # paths listed in a result (all are counted)
JOURNAL = "memoryd-sync.json"  # under .git/: a merge being written
STATE = "memoryd-sync-state.json"  # under .git/: the last sync, for status
HISTORY_OFF = "the git history is off (git.enabled, or no git binary): sync needs it"


@dataclass
class _Merged:
    head: str | None  # the commit HEAD is now
    plan: dict[str, Any]
    changed: list[str]
    would_merge: bool = False  # a dry run's: the sync would make a merge commit


class RemoteSync:
    def __init__(self, root: Path, config: GitConfig, history: GitHistory, stores: Stores,
                 files: FileSync, clock: Callable[[], float] = time.time) -> None:
        self.root, self.config, self.history = root, config, history
        self.stores, self.files, self.clock = stores, files, clock
        self._running = trio.Lock()
        self._timings: dict[str, float] = {}  # seconds, per step of the sync running
        self.state: dict[str, Any] = self._load_state()

    @property
    def url(self) -> str | None:
        return self.config.remote or None

    @property
    def branch(self) -> str | None:
        """The remote's branch: the settings', else the one learned from the remote's
        HEAD at a sync (None until then)."""
        if self.config.branch:
            return self.config.branch
        learned = self.state.get("branch_of")
        if isinstance(learned, dict) and self.url and learned.get("remote") == shown(self.url):
            branch = learned.get("branch")
            return branch if isinstance(branch, str) else None
        return None

    async def _branch(self, url: str, timeout: float) -> str:
        known = self.branch
        if known is None:
            known = await default_branch(self.root, url, timeout)
            self.state["branch_of"] = {"remote": shown(url), "branch": known,
                                       "from": "the remote's HEAD"}
            log.info("sync.branch", remote=shown(url), branch=known,
                     reason="git.branch is not set: the branch the remote's HEAD names")
        return known

    # -- status ----------------------------------------------------------------------
    def _load_state(self) -> dict[str, Any]:
        try:
            loaded = json.loads((self.root / ".git" / STATE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {"failures": 0, "retry_at": None, "last": None, "last_ok": None}
        return loaded if isinstance(loaded, dict) else {"failures": 0}

    def _save_state(self) -> None:
        path = self.root / ".git" / STATE
        try:
            temp = path.with_suffix(".tmp")
            temp.write_text(json.dumps(self.state), encoding="utf-8")
            temp.replace(path)
        except OSError as exc:  # status only: the sync itself is in git
            log.warning("sync.state_not_saved", error=str(exc))

    def describe(self) -> dict[str, Any]:
        """For `stats` and `memoryctl status`: the remote, the last sync, and when the
        next is held back to after failures (the `sync` job's own time is in `jobs`)."""
        retry_at = self.state.get("retry_at")
        return {"remote": shown(self.url) if self.url else None, "branch": self.branch,
                "last": self.state.get("last"), "last_ok": self.state.get("last_ok"),
                "failures": self.state.get("failures", 0),
                "retry_at": _iso(retry_at) if retry_at else None,
                "conflicts": self.state.get("conflicts", [])}

    # -- a sync ----------------------------------------------------------------------
    async def sync(self, dry_run: bool = False, scheduled: bool = False) -> dict[str, Any]:
        """Commit, fetch, merge, push; the result says what came in, went out, was
        resolved, needs the user, and why it failed if it did."""
        if self.url is None:
            raise InvalidParams("git.remote", "no remote is set: put `git: {remote: URL}` "
                                "in config.yaml (docs/sync.md)")
        await self.history.started.wait()  # a sync asked for right after the start
        if not self.history.enabled:
            raise InvalidParams("git", HISTORY_OFF)
        retry_at = self.state.get("retry_at")
        if scheduled and retry_at and self.clock() < retry_at:
            return {"remote": shown(self.url), "skipped": True,
                    "reason": f"backing off after {self.state.get('failures')} failures "
                              f"until {_iso(retry_at)}"}
        async with self._running:
            started = self.clock()
            result: dict[str, Any] = {
                "remote": shown(self.url), "branch": self.branch, "dry_run": dry_run,
                "at": _iso(started), "came_in": 0, "went_out": 0, "resolved": [],
                "needs_you": [], "refused": [], "error": None}
            try:
                result.update(await self._rounds(dry_run))
                if not dry_run:
                    self.state["conflicts"] = await self._open(result["needs_you"])
            except (RemoteError, GitError, OSError) as exc:
                result["error"] = str(exc)[:500]
            result["duration_ms"] = round((self.clock() - started) * 1000, 1)
            if not dry_run:
                self._record(result, started)
            return result

    async def _open(self, found: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Files a sync could not merge, this one's and earlier ones', until this
        machine's copy changes (the user merged them by hand)."""
        entries = {c["path"]: c for c in [*self.state.get("conflicts", []), *found]}
        if not entries:
            return []
        listed = await git(self.root, "ls-tree", "-z", "HEAD", "--",
                           *(f":(literal){p}" for p in entries))
        now: dict[str, str] = {}
        for record in listed.decode("utf-8", "surrogateescape").split("\0"):
            meta, _, path = record.partition("\t")
            if path:
                now[path] = meta.split()[2]
        return [c for p, c in entries.items() if now.get(p) == c.get("ours")]

    def _record(self, result: dict[str, Any], started: float) -> None:
        shown_result = {**result, "at_epoch": started}
        self.state["last"] = shown_result
        if result.get("error"):
            failures = int(self.state.get("failures", 0)) + 1
            wait = min(BACKOFF_FIRST * 2 ** (failures - 1), BACKOFF_MAX)
            self.state.update(failures=failures, retry_at=started + wait)
            log.warning("sync.failed", remote=result["remote"], error=result["error"],
                        failures=failures, retry_in_s=wait)
        else:
            self.state.update(failures=0, retry_at=None, last_ok=result["at"])
            log.info("sync.done", remote=result["remote"], came_in=result.get("came_in"),
                     went_out=result.get("went_out"), resolved=len(result.get("resolved", [])),
                     needs_you=len(result.get("needs_you", [])))
        self._save_state()

    async def _rounds(self, dry_run: bool) -> dict[str, Any]:
        url = self.url or ""
        timeout = float(self.config.sync_timeout)
        self._timings = {}
        branch = await self._branch(url, timeout)
        came_in: list[str] = []
        resolved: list[dict[str, Any]] = []
        needs_you: list[dict[str, Any]] = []
        refused: list[dict[str, Any]] = []
        went_out = 0
        for attempt in range(1, ATTEMPTS + 1):
            await self._after_purge(url, branch, timeout)
            with self._timed("fetch"):
                theirs = await fetch(self.root, url, branch, timeout)
            merged = await self._merge(theirs, dry_run)
            came_in += merged.changed
            resolved += merged.plan.get("resolved", [])
            needs_you += merged.plan.get("needs_you", [])
            refused += merged.plan.get("refused", [])
            ahead = await self._ahead(theirs, merged.head)
            if dry_run or merged.head is None or ahead == 0:
                went_out = ahead + merged.would_merge if dry_run else 0
                break
            with self._timed("push"):
                pushed = await push(self.root, url, branch, merged.head, timeout)
            if pushed:
                went_out = ahead
                break
            log.info("sync.remote_moved", attempt=attempt)
        else:
            raise RemoteError(f"the remote kept moving: {ATTEMPTS} pushes were refused; "
                              "the next sync tries again")
        return {"branch": branch, "attempts": attempt, "came_in": len(came_in),
                "paths_in": came_in[:SHOWN],
                "timings_ms": {k: round(v * 1000, 1) for k, v in self._timings.items()},
                "went_out": went_out, "resolved": resolved, "needs_you": needs_you,
                "refused": refused, "head": merged.head}

    async def _after_purge(self, url: str, branch: str, timeout: float) -> None:
        """After a purge rewrote the history here, the remote's old history would bring
        back everything purged, into .git by a fetch and into the files by a merge: no
        fetch until the remote has the new history (the user force-pushed it, as
        `memoryctl purge` printed). Asked without fetching anything."""
        rewritten = purged_head(self.root)
        if rewritten is None:
            return
        theirs = await remote_head(self.root, url, branch, timeout)
        # The remote has the new history (pushed as it was, or with later commits), or
        # is at a commit from before anything purged (the rewrite kept those); a commit
        # this machine does not have is of the old history.
        if theirs is None or theirs == rewritten or (await _known(self.root, theirs) and (
                await _contains(self.root, theirs, rewritten)
                or await _contains(self.root, rewritten, theirs))):
            purge_settled(self.root)
            return
        raise RemoteError(
            "a purge rewrote this machine's history and the remote still has the old one, "
            "which would bring back what was purged: replace it there first with "
            f"`git -C {self.root} push --force {shown(self.url or '')} "
            f"HEAD:refs/heads/{branch}`")

    async def _paths_of(self, ids: Iterable[str]) -> dict[str, str]:
        catalog = self.stores.catalog  # its reader is the reading thread's own
        return await self.stores.workers.read(lambda: catalog.reader.paths_of(ids))

    @contextlib.contextmanager
    def _timed(self, step: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self._timings[step] = self._timings.get(step, 0.0) + time.perf_counter() - started

    async def _ahead(self, theirs: str | None, head: str | None) -> int:
        """Commits `head` has that the remote has not."""
        if head is None:
            return 0
        spec = f"{theirs}..{head}" if theirs else head
        return int((await git(self.root, "rev-list", "--count", spec)).decode().strip())

    async def _merge(self, theirs: str | None, dry_run: bool) -> _Merged:
        """This machine's writes committed, the remote's merged in and written."""
        async with self.stores.workers.exclusive(), self.history.lock:
            # A sync killed mid-merge (kill -9 in its read-tree) leaves a lock that would
            # fail every later merge; none of our gits runs now.
            self.history.remove_stale_locks()
            # A dry run commits too: what it would send includes the writes the
            # background commit has not made yet (it would a moment later anyway, and a
            # commit changes no file).
            await self.history.commit()
            ours = await head_of(self.root)
            if theirs is None or ours == theirs or (ours and await _contains(self.root, ours,
                                                                            theirs)):
                return _Merged(ours, {}, [])
            base = await _merge_base(self.root, ours, theirs) if ours else None
            if ours is None:  # nothing committed here yet: the remote's is ours
                plan_info: dict[str, Any] = {}
                target = theirs
            else:
                with self._timed("merge"):
                    plan = await Planner(self.root, ours, theirs, base, self._paths_of).run()
                plan_info = {"resolved": plan.resolved, "needs_you": plan.needs_you,
                             "refused": plan.refused}
                with self._timed("merge"):
                    tree = await write_tree(self.root, ours, plan)  # objects only
                    if dry_run:
                        return _Merged(ours, plan_info, sorted({*plan.updates, *plan.texts}),
                                       would_merge=not await _fast_forward(
                                           self.root, ours, theirs, base, tree))
                    target = await self._commit(ours, theirs, base, tree, plan_info)
            if dry_run:
                return _Merged(ours, plan_info, [])
            with self._timed("write"):
                changed, texts = await self._apply(ours, target)
            await self._index(changed, texts)
        return _Merged(target, plan_info, changed)

    async def _commit(self, ours: str, theirs: str, base: str | None, tree: str,
                      plan: dict[str, Any]) -> str:
        """A fast-forward when this machine had nothing new; else a merge commit."""
        if await _fast_forward(self.root, ours, theirs, base, tree):
            return theirs
        message = (f"memoryd: sync with {shown(self.url or '')}: "
                   f"{len(plan['resolved'])} resolved, {len(plan['needs_you'])} need you, "
                   f"{len(plan['refused'])} refused")
        return (await git(self.root, "commit-tree", tree, "-p", ours, "-p", theirs,
                          "-m", message)).decode().strip()

    # -- writing the merge -----------------------------------------------------------
    async def _index(self, changed: list[str], texts: dict[str, bytes]) -> None:
        """What the merge wrote, re-read into the indexes, with its texts embedded in
        one batch first."""
        with self._timed("index"):
            paths = [p for p in changed if self.files.indexes(p)]
            staged = await trio.to_thread.run_sync(lambda: [
                c.memory for p in paths
                if p in texts and (c := merge.read(p, texts[p].decode("utf-8", "replace")))])
            await self.files.sync_paths(paths, keep=False, by="sync", staged=staged)
            if any(p.startswith("sessions/") for p in paths):  # turns another machine swept
                await self.files.reconcile_graph(self.files.graph)

    async def _apply(self, ours: str | None, target: str) -> tuple[list[str], dict[str, bytes]]:
        """The files `target` changes written under the root, the index and HEAD moved;
        a journal makes it whole again after a kill."""
        journal = self.root / ".git" / JOURNAL
        journal.write_text(json.dumps({"from": ours, "to": target}), encoding="utf-8")
        written = await self._write(ours, target)
        journal.unlink(missing_ok=True)
        return written

    async def _write(self, ours: str | None, target: str
                     ) -> tuple[list[str], dict[str, bytes]]:
        base = ours or (await empty_tree(self.root))
        changes = await diff(self.root, base, target)
        for path, (_, entry) in changes.items():  # the plan left these out; never write one
            why = refusal(path, entry[0], 0) if entry is not None else None
            if why is not None:
                raise GitError(f"the merge holds {path}, which memoryd does not write "
                               f"({why}); nothing was applied")
        wanted = {entry[1] for _, entry in changes.values() if entry is not None}
        data = await blobs(self.root, wanted)
        files = self.stores.files

        def write() -> None:
            for path, (_, entry) in changes.items():  # first: a link may stand where a
                if entry is None:                     # folder comes
                    files.unlink(path)
            # (no link among them: `refusal` refused every one above)
            texts = [(p, data[e[1]]) for p, (_, e) in changes.items() if e is not None]
            temps = files.write_temps(texts)
            for (path, _), (temp, _) in zip(texts, temps, strict=True):
                files.replace(temp, path, sync=False)
            files.sync_dirs([p for p, (_, e) in changes.items() if e is not None])

        await trio.to_thread.run_sync(write)
        paths = sorted(changes)
        if paths:
            await git(self.root, "update-index", "-z", "--add", "--remove", "--stdin",
                      stdin="\0".join(paths).encode("utf-8", "surrogateescape"))
        await git(self.root, "update-ref", "-m", "memoryd: sync", "HEAD", target,
                  *((ours,) if ours else ()))
        return paths, {p: data[e[1]] for p, (_, e) in changes.items()
                       if e is not None and e[1] in data}

    async def recover(self) -> None:
        """A sync killed while writing its merge: write it again and move HEAD (run at
        start, before the history's first commit would take the half-written files for
        changes of this machine's)."""
        journal = self.root / ".git" / JOURNAL
        try:
            noted = json.loads(journal.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError):
            noted = {}
        head = await head_of(self.root)
        if isinstance(noted, dict) and noted.get("to") and head in (noted.get("from"),
                                                                     noted.get("to")):
            source = noted.get("from") if head != noted["to"] else noted["to"]
            try:
                async with self.stores.workers.exclusive():
                    changed, texts = (await self._write(source, noted["to"])
                                      if source != noted["to"] else ([], {}))
                    await self._index(changed, texts)
            except GitError as exc:
                log.error("sync.recovery_failed", error=str(exc))
                return
            log.warning("sync.recovered", files=len(changed), head=noted["to"][:12])
        journal.unlink(missing_ok=True)


async def _fast_forward(root: Path, ours: str, theirs: str, base: str | None,
                        tree: str) -> bool:
    """Whether the merge is the remote's commit itself: this machine had nothing new,
    and the merged tree is the remote's."""
    their_tree = (await git(root, "rev-parse", f"{theirs}^{{tree}}")).decode().strip()
    return base == ours and tree == their_tree


async def _known(root: Path, commit: str) -> bool:
    """Whether this repository has `commit`."""
    try:
        await git(root, "cat-file", "-e", f"{commit}^{{commit}}")
    except GitError:
        return False
    return True


async def _contains(root: Path, head: str, commit: str) -> bool:
    """Whether `commit` is already in `head`'s history."""
    try:
        await git(root, "merge-base", "--is-ancestor", commit, head)
    except GitError:
        return False
    return True


async def _merge_base(root: Path, ours: str, theirs: str) -> str | None:
    try:
        return (await git(root, "merge-base", ours, theirs)).decode().strip() or None
    except GitError:  # unrelated histories: two roots that began apart
        return None


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")
