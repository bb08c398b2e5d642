"""Git history of the root: every change committed in the background.

The root becomes a git repository (index/, the socket, the lock and temp files are
ignored). Each change marks the history dirty with the files it touched; `run_forever`
commits at most once per `git.commit_interval`, with a message that counts what
changed, in a subprocess (never on a reply's path). The user's own commits are left
alone: nothing is ever reset, amended or rewritten. A missing or broken git logs a
warning and turns the history off; the memories never depend on it.

What a commit costs must not grow with the store. `git add -A` and `git commit` stat
every tracked file, twice, and write each new file as a loose object (an inode each,
then a `gc --auto` to pack them): 0.7-1.2 ms of CPU a memory at 130,000 files, up to
a quarter of a bulk write. So a commit stages only the files the changes named
(`update-index`), minus those the user's ignore rules exclude, with new blobs streamed
into one pack (`core.bigFileThreshold=1`, on that command only), and commits the
index as it is (`write-tree`, `commit-tree`, `update-ref`): 0.3 ms a memory.
Everything is staged (`add -A`) at the first commit after a start, every `FULL_EVERY`
seconds (what no change named: a file dropped into the root) and when staging by
name fails.

`revisions(id)` reads a memory's past back: every commit that touched a file of that
id (wherever it moved: inbox, a category, trash/), the version its front matter said,
and a unified diff against the revision before.
"""

from __future__ import annotations

import difflib
import os
import shutil
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog
import trio

from memoryd.history import local
from memoryd.history.runner import GIT_ENV as GIT_ENV  # for callers
from memoryd.history.runner import GitError, head_of, text
from memoryd.store import frontmatter
from memoryd.store.names import SHORT_ID, id_in_name
from memoryd.store.walk import TMP_PREFIX

log = structlog.get_logger("memoryd.git")
# Seconds a lock must have lain untouched, and open in no process, to be stale: a file
# time's granularity (a second or two on some file systems), and the instant between
# a live git closing its lock and renaming it into place.
STALE_MARGIN = 2.0
IGNORE = f"""# memoryd: derived or live files, not history
/index/
/memory.sock
/.daemon.lock
*.tmp
{TMP_PREFIX}*
# Obsidian's own state, when the root is opened as a vault
/.obsidian/workspace.json
/.obsidian/workspace-mobile.json
/.obsidian/cache/
# this machine's own settings and logs: never committed, never synced
{chr(10).join(local.IGNORED)}
"""
MAX_REVISIONS = 200
FULL_EVERY = 600.0  # seconds between commits that stage everything
# A commit's fixed work grows with the store (write-tree, reading and writing the index
# file: about 0.6 s of CPU at 130,000 memories), so commits are spaced at least this many
# times as long as the last one took, up to SPACED_MAX seconds: a bulk write makes fewer,
# bigger commits. (Capped: each file costs git work too, so under a sustained bulk write
# a commit's length grows with the gap before it.)
SPACING = 20
SPACED_MAX = 60.0
# update-index streams new blobs into one pack, not loose files. Only for the files a
# commit names: git's bulk check-in looks each new blob up in the list of those it has
# written, one by one, so one command's cost grows with the square of its new files
# (100,000: 6.9 s of CPU against 1.6 s written loose, though `gc --auto` then packs
# those in 8.6 s; 1,000,000: killed after 750 s). A commit names the files of about
# SPACED_MAX seconds of writes; `add -A`, which may meet a whole vault, writes loose
# objects (1,000,000: 173 s, then `gc --auto` 203 s in the background).
_BULK = ("-c", "core.bigFileThreshold=1")
_VERBS = {"A": "added", "M": "changed", "D": "deleted", "R": "moved"}


@dataclass
class Revision:
    commit: str
    date: str
    message: str
    path: str
    text: str | None  # None: the file was removed (moved or deleted) in this commit


def available() -> bool:
    return shutil.which("git") is not None


class GitHistory:
    def __init__(self, root: Path, interval: float) -> None:
        self.root = root
        self.interval = interval
        self.enabled = True
        self.dirty = trio.Event()
        self.commits = 0
        self.failures = 0  # commits failed in a row
        self.last_commit_at: float | None = None
        self.last_error: str | None = None
        self._paths: set[str] = set()  # touched since the last commit (root-relative)
        self._full_at: float | None = None  # when everything was last staged
        # One git at a time changes the repository: a commit, or a sync's merge.
        self.lock = trio.Lock()
        self.on_commit: list[Callable[[], None]] = []  # told after each background commit
        self.started = trio.Event()  # the repository is made and its first commit tried

    # -- setting up ------------------------------------------------------------------
    async def start(self, before_commit: Callable[[], Awaitable[None]] | None = None) -> None:
        """Make the root a repository (once) and commit what is there now. A root git
        cannot use turns the history off; a first commit that fails (a user's git
        holding index.lock, often) is tried again by `run_forever`, as any other.
        `before_commit`: what must run first (a sync killed mid-way finished)."""
        try:
            if not (self.root / ".git").exists():
                await self._git("init", "-q")
                log.info("git.initialised", root=str(self.root))
            else:
                await self._git("rev-parse", "--git-dir")  # a repository git can read
            await self._keep_local_out()
        except (GitError, OSError) as exc:
            self._disable(exc)
            self.started.set()
            return
        try:
            if before_commit is not None:
                await before_commit()
            await self._commit_or_retry()
        finally:
            self.started.set()

    async def _keep_local_out(self) -> None:
        """The ignore rules written (a new root) or completed (an older root's, or a
        user's, without the machine's own files), and what an older root tracked of
        those files taken out of the index: the next commit drops them from the
        history's tree, and the files themselves stay as they are."""
        ignore = self.root / ".gitignore"
        if not ignore.exists():
            ignore.write_text(IGNORE, encoding="utf-8")
        else:
            text = ignore.read_text(encoding="utf-8", errors="replace")
            if missing := local.missing_lines(text):
                block = "# memoryd: this machine's own settings and logs, never synced\n"
                ignore.write_text(text + ("" if text.endswith("\n") or not text else "\n")
                                  + block + "".join(f"{line}\n" for line in missing),
                                  encoding="utf-8")
        tracked = await self._git("ls-files", "-z", "--", *local.TRACKED_BEFORE)
        if tracked.strip("\0"):
            await self._git("rm", "-r", "-q", "--cached", "--ignore-unmatch", "--",
                            *local.TRACKED_BEFORE)
            log.info("git.local_files_untracked", paths=sorted(tracked.strip("\0").split("\0")),
                     hint="kept on disk; each machine keeps its own from now on")
            self.dirty.set()

    def _disable(self, exc: BaseException) -> None:
        self.enabled = False
        self.last_error = str(exc)[:500]
        log.warning("git.disabled", error=self.last_error,
                    hint="the memories are safe; only their git history is off")

    # -- committing ------------------------------------------------------------------
    def changed(self, paths: Iterable[str]) -> None:
        """These files (root-relative) changed: a unit of work's, or pending.md.
        Called on the trio thread."""
        self._paths.update(paths)
        self.dirty.set()

    async def run_forever(self) -> None:
        took = 0.0  # how long the last commit took
        while self.enabled:
            await self.dirty.wait()
            # One commit gathers the whole interval (a longer one when commits are slow).
            await trio.sleep(max(self.interval, min(SPACING * took, SPACED_MAX)))
            self.dirty = trio.Event()
            started = trio.current_time()
            await self._commit_or_retry()
            took = trio.current_time() - started

    async def _commit_or_retry(self) -> None:
        try:
            async with self.lock:
                self.remove_stale_locks()
                made = await self.commit()
        except (GitError, OSError) as exc:  # a user's git holding index.lock, often
            self.last_error = str(exc)[:500]
            self.failures += 1
            self.dirty.set()  # tried again after the next interval
            log.warning("git.commit_failed", error=self.last_error, retry=True,
                        failures=self.failures)
        else:
            self.failures = 0
            if made is not None:
                for tell in self.on_commit:
                    tell()

    def remove_stale_locks(self) -> None:
        """Lock files a git killed mid-commit left (a kill -9 of the daemon during its
        commit, often): open in no process and untouched for STALE_MARGIN, they would
        fail every commit from now on. Our own gits run one at a time and none runs
        now; a live git's lock is open in it, and is left alone. (Not "older than this
        start": a service restarted a moment after the kill would keep the lock for
        its whole life.)"""
        folder = self.root / ".git"
        # Every lock git or memoryd's own gits can leave: index, HEAD, config, packed-refs
        # (a `gc --auto` killed while packing a sync's fetched refs), the merge index a
        # sync's read-tree writes (memoryd-merge.index.lock), a ref's, a reflog's.
        for lock in [*folder.glob("*.lock"), *(folder / "refs").rglob("*.lock"),
                     *(folder / "logs").rglob("*.lock")]:
            try:
                made = lock.lstat().st_mtime
            except OSError:
                continue
            if time.time() - made < STALE_MARGIN or _held_open(lock):
                continue
            try:
                lock.unlink()
            except OSError as exc:
                log.warning("git.stale_lock_kept", path=str(lock), error=str(exc))
                continue
            log.warning("git.stale_lock_removed", path=str(lock),
                        age_s=round(time.time() - made, 1))

    def describe(self) -> dict[str, Any]:
        """For `stats`: whether the history runs, and how its commits go."""
        last = (datetime.fromtimestamp(self.last_commit_at, UTC).isoformat()
                if self.last_commit_at is not None else None)
        return {"enabled": self.enabled, "commits": self.commits,
                "last_commit_at": last, "failures": self.failures,
                "last_error": self.last_error, "waiting": len(self._paths)}

    async def commit(self) -> str | None:
        """Stage what changed and commit it; the new commit, or None when nothing did."""
        if not self.enabled:
            return None
        paths, self._paths = self._paths, set()
        now = trio.current_time()
        full = self._full_at is None or now - self._full_at >= FULL_EVERY
        try:
            try:
                await self._stage(None if full else paths)
            except GitError as exc:
                if full:
                    raise
                log.warning("git.staging_by_name_failed", error=str(exc)[:300])
                full = True
                await self._stage(None)
        except BaseException:
            self._paths |= paths  # named again next time
            raise
        if full:
            self._full_at = now
        status = await self._git("diff", "--cached", "--name-status", "-M", "-z")
        fields = status.split("\0")
        counts: dict[str, int] = {}
        i = 0
        while i < len(fields) and fields[i]:
            code = fields[i][0]
            counts[code] = counts.get(code, 0) + 1
            i += 3 if code in "RC" else 2
        if not counts:
            return None
        message = "memoryd: " + ", ".join(f"{n} {_VERBS.get(c, c)}"
                                          for c, n in sorted(counts.items()))
        head = await self._commit_index(message)
        self.commits += 1
        self.last_commit_at = time.time()
        log.info("git.committed", commit=head[:12], message=message)
        return head

    async def _stage(self, paths: set[str] | None) -> None:
        """These files, minus those the ignore rules exclude; everything for None."""
        if paths is None:
            await self._git("add", "-A")
            return
        if not paths:
            return
        folders = sorted({f":(literal){p.rpartition('/')[0] or p}" for p in paths})
        ignored = await self._git("ls-files", "-z", "--others", "--ignored",
                                  "--exclude-standard", "--", *folders)
        named = sorted(paths - set(ignored.split("\0")))
        if named:  # a path gone from disk leaves the index (--remove), if it was in it
            await self._git(*_BULK, "update-index", "--add", "--remove", "-z", "--stdin",
                            stdin="\0".join(named))

    async def _commit_index(self, message: str) -> str:
        """Commit the index on top of HEAD (`git commit` would stat every file again).
        A user's commit between reading HEAD and moving it fails `update-ref`, and the
        change is committed at the next interval."""
        tree = (await self._git("write-tree")).strip()
        parent = await head_of(self.root) or ""  # "": no commit yet
        head = (await self._git("commit-tree", tree, *(("-p", parent) if parent else ()),
                                "-m", message)).strip()
        await self._git("update-ref", "-m", f"commit: {message}", "HEAD", head, parent)
        try:
            await self._git("gc", "--auto", "--quiet")  # as `git commit` does
        except GitError as exc:  # the commit is made; packing waits for the next one
            log.warning("git.gc_failed", error=str(exc)[:300])
        return head

    # -- reading the past ------------------------------------------------------------
    async def revisions(self, memory_id: str, paths: Sequence[str] = ()
                        ) -> list[dict[str, Any]]:
        """The committed revisions of a memory, oldest first: commit, date, message,
        path, version (None where the file was removed), and the unified diff."""
        revisions, before = [], ""
        for rev in await self._revisions(memory_id, paths):
            after = rev.text or ""
            diff = "".join(difflib.unified_diff(
                before.splitlines(keepends=True), after.splitlines(keepends=True),
                fromfile="a/" + rev.path, tofile="b/" + rev.path))
            revisions.append({"commit": rev.commit, "date": rev.date, "message": rev.message,
                              "path": rev.path, "version": _version(rev.text),
                              "diff": diff})
            before = after
        return revisions

    async def text_at(self, memory_id: str, version: int, paths: Sequence[str] = ()
                      ) -> str | None:
        """The file text of a memory at one of its versions, from the history."""
        for rev in reversed(await self._revisions(memory_id, paths)):
            if _version(rev.text) == version:
                return rev.text
        return None

    async def _revisions(self, memory_id: str, paths: Sequence[str] = ()) -> list[Revision]:
        """Every commit that touched a file of this id, oldest first, with the text."""
        if not self.enabled or not (self.root / ".git").exists():
            return []
        # Named by the id (the trash, an older root), a turn's, or readable (names.py):
        # `<slug>-<short id>.md` may be another memory's whose id starts alike, so a
        # readable path counts once one of its revisions holds this id.
        specs = [f":(glob)**/{memory_id}.md", f":(glob)**/*__{memory_id}.md",
                 f":(glob)**/{memory_id}.*.md", f":(glob)**/*-{memory_id[:SHORT_ID]}.md",
                 f":(glob)**/*-{memory_id}.md",
                 # a name no id is in (an ingested page's own): where it is known to be
                 *(f":(literal){p}" for p in paths)]
        try:
            out = await self._git("log", f"--max-count={MAX_REVISIONS}", "--name-status",
                                  "--format=%x1e%H%x1f%aI%x1f%s", "--", *specs)
        except GitError as exc:  # no commit yet (a new root), a repository being repaired
            log.warning("git.log_failed", error=str(exc))
            return []
        found: list[Revision] = []
        ours: set[str] = set()  # readable paths seen holding this id
        for record in out.split("\x1e")[1:]:
            head, _, names = record.partition("\n")
            commit, date, message = head.split("\x1f", 2)
            for line in names.splitlines():
                parts = line.split("\t")
                if len(parts) < 2:
                    continue
                status, path = parts[0], parts[-1]  # a move: its new path
                text = None if status.startswith("D") else await self._show(commit, path)
                if _kept_copy(text, memory_id):
                    continue  # the version an update kept: history lists it already
                if text is not None and _id_of(text) == memory_id:
                    ours.add(path)
                found.append(Revision(commit, date, message, path, text))
        found.reverse()
        return [r for r in found if r.path in ours or _named_by(r.path, memory_id)]

    async def _show(self, commit: str, path: str) -> str | None:
        try:
            return await self._git("show", f"{commit}:{path}")
        except GitError:
            return None

    async def _git(self, *args: str, stdin: str = "") -> str:
        return await text(self.root, *args, stdin=stdin)


def _version(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return frontmatter.parse(text, "history").memory.version
    except frontmatter.FrontMatterError:
        return None


def _id_of(text: str) -> str | None:
    try:
        return frontmatter.parse(text, "history").memory.id
    except frontmatter.FrontMatterError:
        return None


def _named_by(path: str, memory_id: str) -> bool:
    """A path whose name is the id's own (not a readable name that may be another's)."""
    name = path.rsplit("/", 1)[-1]
    return memory_id in (name.removesuffix(".md"), id_in_name(name))


def _kept_copy(text: str | None, memory_id: str) -> bool:
    """A version an update kept under trash/ (UnitOfWork): replaced by itself."""
    if text is None or f"replaced_by: {memory_id}" not in text:
        return False
    try:
        return frontmatter.parse(text, "history").memory.replaced_by == memory_id
    except frontmatter.FrontMatterError:
        return False


def _held_open(path: Path) -> bool:
    """Whether a process has `path` open (Linux's /proc; elsewhere: assume it is)."""
    proc = Path("/proc")
    if not (proc / "self" / "fd").is_dir():
        return True
    target = str(path.resolve())
    for fds in proc.glob("[0-9]*/fd"):
        try:
            if any(os.readlink(fd) == target for fd in fds.iterdir()):
                return True
        except OSError:  # gone, or another user's: not ours to know
            continue
    return False
