"""A sync's merge, computed in git's object store: no file under the root is touched
and no conflict marker is ever written.

Both sides are compared with the commit they share (`git diff-tree`, renames off: a
memory is followed by its id, not by git's guess at a rename):

- A path only the other machine changed is taken as it is there.
- A memory (by its id, wherever its files are) that both machines changed becomes one
  by merge.py's rules; the losing text is kept as a version under trash/versions/.
  A memory one machine deleted (moved to trash/) and the other edited stays, with the
  edit; the deleted copy is kept as a version, so the delete is in its history.
- This machine's own files (history/local.py: config.yaml, logs/, .gitignore) are
  never taken from the other side (what it sends of its settings or logs is refused
  and reported), nor given up to its delete: each machine keeps its own, by design.
- Any other file both changed (a user's own notes outside the memory folders) gets
  git's own three-way merge of its text (`git merge-file`); where that conflicts,
  this machine's version stays and the conflict is reported, never
  resolved by guessing. Files memoryd regenerates (memory.md, pending.md) keep this
  machine's, silently: the next run writes them anew.
- What the other machine sent that memoryd refuses to write (a path into `.git` or
  the derived index, a temp name, a submodule, a symbolic link, a file where this
  machine has a folder, a file over MAX_SYNCED bytes) is left out of the merge and
  reported: the rest merges, and nothing of this machine's folder goes.

The result is a tree: this machine's, with `updates` applied in a temporary index.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import trio

from memoryd.history import local, merge
from memoryd.history.runner import ZERO, GitError, blobs, git, sizes
from memoryd.store.files import named_by_id
from memoryd.store.rooted import MAX_FILE_BYTES, UnsafePath, check_relpath
from memoryd.store.walk import TMP_PREFIX, WATCHED_DIRS

TRASH = "trash/"
VERSIONS = "trash/versions"
GENERATED = frozenset({"memory.md", "pending.md"})
# Never written from a remote: git's own folder, the derived indexes, the live files.
_REFUSED_TOP = frozenset({".git", "index", "memory.sock", ".daemon.lock"})
MAX_SYNCED = 64 * 1024 * 1024  # a file from the remote larger than this is refused
_MEMORY_TOPS = (*WATCHED_DIRS, "trash")

Entry = tuple[str, str]  # (mode, blob sha)


@dataclass
class Plan:
    # path -> what it becomes, relative to this machine's tree: an entry, or None (gone)
    updates: dict[str, Entry | None] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)  # path -> a new file's text
    came_in: list[str] = field(default_factory=list)  # paths taken from the other side
    resolved: list[dict[str, Any]] = field(default_factory=list)
    needs_you: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.updates or self.texts)


def is_memory_path(path: str) -> bool:
    return path.endswith(".md") and path.split("/", 1)[0] in _MEMORY_TOPS


NAME_MAX = 255  # bytes in one name: ext4, APFS, NTFS (git itself takes longer ones)


def refusal(path: str, mode: str, size: int) -> str | None:
    """Why a path from the remote is not written under the root (None: it may be)."""
    try:
        parts = check_relpath(path)
    except UnsafePath as exc:
        return str(exc)
    if parts[0] in _REFUSED_TOP or any(p.lower() == ".git" for p in parts):
        return "is inside git's folder or memoryd's derived index"
    if local.is_local(path):
        # Whoever can push would otherwise turn redaction off or point llm.url at a
        # server of theirs, which then hears everything said here.
        return "is this machine's own settings or logs: never taken from a remote"
    if any(p.startswith(TMP_PREFIX) or p.endswith(".tmp") for p in parts):
        return "has a temporary file's name"
    if any(len(p.encode("utf-8", "surrogateescape")) > NAME_MAX for p in parts):
        return f"has a name longer than the {NAME_MAX} bytes a file system takes"
    if mode == "160000":
        return "is a submodule"
    if mode == "120000":  # memoryd never follows one; in its tree it is a hostile's
        return "is a symbolic link"
    if size > MAX_SYNCED:
        return f"is {size} bytes, more than the {MAX_SYNCED} a synced file may be"
    return None


async def diff(root: Path, old: str, new: str) -> dict[str, tuple[Entry | None, Entry | None]]:
    """Each path that differs between two trees: (its entry in `old`, in `new`)."""
    out = (await git(root, "diff-tree", "-r", "-z", "--no-renames", old, new)).decode(
        "utf-8", "surrogateescape")
    fields = out.split("\0")
    changes: dict[str, tuple[Entry | None, Entry | None]] = {}
    for i in range(0, len(fields) - 1, 2):
        meta, path = fields[i].lstrip(":").split(" "), fields[i + 1]
        if len(meta) < 4:
            continue
        before = (meta[0], meta[2]) if meta[0] != "000000" else None
        after = (meta[1], meta[3]) if meta[1] != "000000" else None
        changes[path] = (before, after)
    return changes


async def names(root: Path, commit: str) -> set[str]:
    """Every file and folder in `commit`'s tree."""
    out = await git(root, "ls-tree", "-r", "-t", "-z", "--name-only", commit)
    return set(out.decode("utf-8", "surrogateescape").split("\0")) - {""}


async def folders(root: Path, commit: str) -> set[str]:
    """Every folder in `commit`'s tree."""
    out = await git(root, "ls-tree", "-r", "-d", "-z", "--name-only", commit)
    return set(out.decode("utf-8", "surrogateescape").split("\0")) - {""}


async def empty_tree(root: Path) -> str:
    return (await git(root, "hash-object", "-t", "tree", "--stdin")).decode().strip()


class Planner:
    """One merge of `ours` and `theirs` (commits) from `base` (None: unrelated)."""

    def __init__(self, root: Path, ours: str, theirs: str, base: str | None,
                 paths_of: merge.Names | None = None) -> None:
        self.root, self.ours, self.theirs, self.base = root, ours, theirs, base
        self.paths_of = paths_of
        self.plan = Plan()
        self._ours: dict[str, tuple[Entry | None, Entry | None]] = {}
        self._theirs: dict[str, tuple[Entry | None, Entry | None]] = {}
        self._texts: dict[str, str] = {}  # blob sha -> text (memory files)
        self._sizes: dict[str, int] = {}
        self._taken: set[str] = set()  # version paths this plan gives out
        self._folders: set[str] = set()  # the folders of this machine's tree
        # Each name of this machine's tree (files and folders) by its case-folded form:
        # a remote's `Meeting.md` beside our `meeting.md` is one file on a disk that
        # ignores case (macOS, Windows), and the second write would overwrite the first.
        self._folded: dict[str, str] = {}

    async def run(self) -> Plan:
        base = self.base or await empty_tree(self.root)
        self._ours = await diff(self.root, base, self.ours)
        self._theirs = await diff(self.root, base, self.theirs)
        self._folders = await folders(self.root, self.ours)
        if any(before is None for before, _ in self._theirs.values()):  # something new
            self._folded = {p.casefold(): p for p in await names(self.root, self.ours)}
        entries = {e for d in (self._ours, self._theirs) for pair in d.values()
                   for e in pair if e is not None}
        self._sizes = await sizes(self.root, [sha for _, sha in entries])
        memory_shas = [sha for (mode, sha) in entries
                       if mode.startswith("100") and self._sizes.get(sha, 0) <= MAX_FILE_BYTES]
        memory_paths = {p for d in (self._ours, self._theirs) for p in d if is_memory_path(p)}
        if memory_paths:
            raw = await blobs(self.root, memory_shas)
            self._texts = {sha: data.decode("utf-8", "replace") for sha, data in raw.items()}
        handled = set()
        # Reading thousands of front matters is CPU: off the event loop, which serves.
        mine = await trio.to_thread.run_sync(self._ids, self._ours)
        theirs = await trio.to_thread.run_sync(self._ids, self._theirs)
        for memory_id in sorted(mine.keys() & theirs.keys()):
            paths = mine[memory_id] | theirs[memory_id]
            await self._memory(memory_id, paths)
            handled |= paths
        for path in sorted(self._theirs):
            if path not in handled:
                await self._path(path)
        return self.plan

    # -- the state of a path ---------------------------------------------------------
    def _state(self, side: dict[str, tuple[Entry | None, Entry | None]], path: str
               ) -> Entry | None:
        if path in side:
            return side[path][1]
        other = self._theirs if side is self._ours else self._ours
        return other[path][0] if path in other else None

    def _base(self, path: str) -> Entry | None:
        pair = self._ours.get(path) or self._theirs.get(path)
        return pair[0] if pair else None

    def _copy(self, path: str, entry: Entry | None) -> merge.Copy | None:
        if entry is None or not is_memory_path(path) or entry[1] not in self._texts:
            return None
        return merge.read(path, self._texts[entry[1]])

    def _ids(self, side: dict[str, tuple[Entry | None, Entry | None]]) -> dict[str, set[str]]:
        """The memories (by id) a side changed: the ids its changed paths held or hold."""
        ids: dict[str, set[str]] = {}
        for path, pair in side.items():
            for entry in pair:
                copy = self._copy(path, entry)
                if copy is not None:
                    ids.setdefault(copy.memory.id, set()).add(path)
        return ids

    # -- one memory both machines changed --------------------------------------------
    def _live(self, state: Any, paths: set[str], memory_id: str) -> merge.Copy | None:
        for path in sorted(paths):
            if path.startswith(TRASH):
                continue
            copy = self._copy(path, state(path))
            if copy is not None and copy.memory.id == memory_id:
                return copy
        return None

    async def _memory(self, memory_id: str, paths: set[str]) -> None:
        ours = self._live(lambda p: self._state(self._ours, p), paths, memory_id)
        theirs = self._live(lambda p: self._state(self._theirs, p), paths, memory_id)
        base = self._live(self._base, paths, memory_id)
        final: merge.Copy | None = None
        versions: list[tuple[str, str]] = []  # (a path it was at, the text to keep)
        skip: set[str] = set()  # trash paths handled here
        if ours is not None and theirs is not None:
            if ours.text == theirs.text and ours.path == theirs.path:
                final = ours
            else:
                merged = merge.merge(ours, theirs, base.memory if base else None,
                                     await self._names({*ours.memory.links,
                                                        *theirs.memory.links}))
                final = merged.winner
                if merged.kept is not None:
                    versions.append((merged.loser_path, merge.as_version(merged.kept)))
                if not merged.quiet:  # (reads counted on each side: nothing to resolve)
                    self.plan.resolved.append({
                        "id": memory_id, "path": final.path, "rule": merged.rule,
                        "winner": "this machine" if merged.first_won else "the other",
                        "kept_other": merged.kept is not None})
        elif ours is not None or theirs is not None:
            present = ours or theirs
            assert present is not None
            gone = self._theirs if ours is not None else self._ours
            if self._superseded(gone, paths, memory_id):  # replaced by a newer fact
                if base is None or present.memory.content != base.memory.content:
                    versions.append((present.path, merge.as_version(present.memory)))
                self.plan.resolved.append({"id": memory_id, "path": present.path,
                                           "rule": "a superseded fact stays superseded"})
            elif base is None or present.text != base.text:  # an edit: it beats the delete
                final = present
                for path in sorted(paths):  # the deleted copy: a kept version, not a delete
                    copy = self._copy(path, self._state(gone, path))
                    if (path.startswith(TRASH) and path in gone and self._base(path) is None
                            and copy is not None and copy.memory.replaced_by is None):
                        versions.append((path, merge.as_version(copy.memory)))
                        skip.add(path)
                        if path in self._ours:
                            self.plan.updates[path] = None
                self.plan.resolved.append({"id": memory_id, "path": present.path,
                                           "rule": "an edit beats a delete"})
        for path in sorted(paths):
            if path.startswith(TRASH):
                if path not in skip:
                    await self._trash_path(path, versions)
                continue
            want = final.text if final is not None and path == final.path else None
            mine = self._state(self._ours, path)
            if want is None:
                if mine is not None:
                    self.plan.updates[path] = None
            elif self._texts_of(mine) != want:
                self._put(path, want)
        for hint, text in versions:
            self._put(await self._version_path(hint, memory_id), text)

    async def _names(self, ids: set[str]) -> dict[str, str]:
        """The file name (stem) of each linked memory: where the merge puts it if it
        moved or came in, else where this machine has it."""
        paths = await self.paths_of(ids) if self.paths_of is not None and ids else {}
        for path, (_, entry) in self._theirs.items():
            copy = self._copy(path, entry) if not path.startswith(TRASH) else None
            if copy is not None and copy.memory.id in ids:
                paths[copy.memory.id] = path
        return {i: PurePosixPath(p).stem for i, p in paths.items()}

    def _superseded(self, side: dict[str, tuple[Entry | None, Entry | None]],
                    paths: set[str], memory_id: str) -> bool:
        """Whether `side` moved the memory out of the live folders as a fact a newer
        one replaced (not a delete: the newer fact holds what it said)."""
        for path in paths:
            copy = self._copy(path, self._state(side, path))
            if (path.startswith(TRASH) and path in side and copy is not None
                    and copy.memory.id == memory_id and copy.memory.superseded_at
                    and copy.memory.replaced_by not in (None, memory_id)):
                return True
        return False

    async def _trash_path(self, path: str, versions: list[tuple[str, str]]) -> None:
        """A file under trash/ of a memory both changed: as any path, except that two
        different files at one path both stay (the other's at a free version path)."""
        mine, other = self._state(self._ours, path), self._state(self._theirs, path)
        if mine == other or path not in self._theirs:
            return
        if path not in self._ours or mine is None:
            self._take(path, other)
        elif other is not None and other[1] in self._texts:
            versions.append((path, self._texts[other[1]]))

    async def _version_path(self, hint: str, memory_id: str) -> str:
        """A free path under trash/versions/ for a kept version of the file at `hint`,
        named by the id as UnitOfWork names the versions it keeps."""
        relpath = named_by_id(hint.removeprefix(f"{VERSIONS}/").removeprefix(TRASH), memory_id)
        name = PurePosixPath(f"{VERSIONS}/{relpath}")
        candidate, n = str(name), 1
        while candidate in self._taken or await self._exists(candidate):
            candidate, n = str(name.with_name(f"{name.stem}.{n}{name.suffix}")), n + 1
        self._taken.add(candidate)
        return candidate

    async def _beside(self, path: str, memory_id: str) -> str:
        """A free path in `path`'s folder for the memory `memory_id`, named by its id."""
        name = PurePosixPath(path)
        candidate = str(name.with_name(f"{name.stem}-{memory_id}.md"))
        if candidate in self._taken or await self._exists(candidate):
            candidate = str(name.with_name(f"{memory_id}.md"))
        self._taken.add(candidate)
        return candidate

    async def _exists(self, path: str) -> bool:
        """Whether either side's tree, or this plan, has a file at `path`."""
        if path in self._ours or path in self._theirs:
            return any(self._state(side, path) is not None
                       for side in (self._ours, self._theirs))
        listed = await git(self.root, "ls-tree", "--name-only", self.ours, "--", path)
        return bool(listed.strip())

    # -- any other path --------------------------------------------------------------
    async def _path(self, path: str) -> None:
        mine, other = self._state(self._ours, path), self._state(self._theirs, path)
        if mine == other:
            return
        if local.is_local(path):
            # Never taken. Each machine's ignore rules differ by design (an older
            # root's were completed), so the other's are passed over in silence; its
            # settings or logs are refused and reported (only a machine running an
            # older memoryd, or a hostile one, sends them). Its delete of one (it
            # stopped tracking it) deletes nothing here.
            if other is not None and path != local.IGNORE_FILE:
                self._take(path, other)
            return
        if path not in self._ours:
            self._take(path, other)
            return
        if path in GENERATED:
            return
        mine_copy, other_copy = self._copy(path, mine), self._copy(path, other)
        if mine_copy and other_copy and mine_copy.memory.id != other_copy.memory.id:
            # Two memories came to one name (a note made by hand on each machine, then
            # given an id by each): both stay, the other's beside this one.
            beside = await self._beside(path, other_copy.memory.id)
            self._put(beside, other_copy.text)
            self.plan.resolved.append({"id": other_copy.memory.id, "path": beside,
                                       "rule": "two memories at one path: both kept"})
            return
        merged = await self._merge_text(path, self._base(path), mine, other)
        if merged is None:
            self.plan.needs_you.append({
                "path": path, "theirs": self.theirs, "ours": mine[1] if mine else None,
                "reason": "both machines changed it and git could not merge the two; "
                          "this machine's is kept"})
        elif self._texts_of(mine) != merged:
            self._put(path, merged)

    def _texts_of(self, entry: Entry | None) -> str | None:
        return self._texts.get(entry[1]) if entry else None

    async def _merge_text(self, path: str, base: Entry | None, mine: Entry | None,
                          other: Entry | None) -> str | None:
        """git's three-way merge of two texts; None when it conflicts (or is not text)."""
        if mine is None or other is None or mine[0] != other[0] or mine[0] != "100644":
            return None
        if any(self._sizes.get(e[1], 0) > MAX_FILE_BYTES for e in (base, mine, other) if e):
            return None
        data = await blobs(self.root, [e[1] for e in (base, mine, other) if e])
        folder = self.root / ".git" / "memoryd-merge"
        folder.mkdir(exist_ok=True)
        names = []
        for label, entry in (("ours", mine), ("base", base), ("theirs", other)):
            file = folder / label
            file.write_bytes(data.get(entry[1], b"") if entry else b"")
            names.append(str(file))
        try:
            out = await git(self.root, "merge-file", "-p", "-q", *names)
        except GitError:  # conflicts (a positive exit) or a binary file
            return None
        try:
            return out.decode("utf-8")
        except UnicodeDecodeError:
            return None

    # -- what the plan does ----------------------------------------------------------
    def _take(self, path: str, entry: Entry | None) -> None:
        """The other side's entry at `path` (None: its delete), unless refused."""
        if entry is not None:
            why = refusal(path, entry[0], self._sizes.get(entry[1], 0))
            if why is None and path in self._folders:  # the folder's files would go with it
                why = "is a file where this machine has a folder"
            if why is None:
                why = self._case_clash(path)
            if why is not None:
                self.plan.refused.append({"path": path, "reason": why})
                return
        self.plan.updates[path] = entry
        self.plan.came_in.append(path)

    def _case_clash(self, path: str) -> str | None:
        """Why `path` cannot be written beside a name that differs from it (or from one
        of its folders) only in case, or None; the first spelling taken keeps the name."""
        parts = path.split("/")
        for n in range(1, len(parts) + 1):
            prefix = "/".join(parts[:n])
            held = self._folded.setdefault(prefix.casefold(), prefix)
            if held != prefix and self._theirs.get(held, (None, True))[1] is None:
                self._folded[prefix.casefold()] = held = prefix  # renamed by case there
            if held != prefix:
                return (f"differs only in case from {held!r}, one file on a disk that "
                        "ignores case")
        return None

    def _put(self, path: str, text: str) -> None:
        self.plan.texts[path] = text
        self.plan.updates.pop(path, None)


async def write_tree(root: Path, ours: str, plan: Plan) -> str:
    """The merged tree: `ours` with the plan applied, in a temporary index."""
    index = root / ".git" / "memoryd-merge.index"
    index.unlink(missing_ok=True)
    try:
        await git(root, "read-tree", f"{ours}^{{tree}}", index=index)
        lines = []
        for path, entry in sorted(plan.updates.items()):
            mode, sha = entry if entry is not None else ("0", ZERO)
            lines.append(f"{mode} {sha}\t{path}")
        for path, text in sorted(plan.texts.items()):
            sha = (await git(root, "hash-object", "-w", "--stdin",
                             stdin=text.encode("utf-8"))).decode().strip()
            lines.append(f"100644 {sha}\t{path}")
        if lines:
            await git(root, "update-index", "-z", "--index-info", index=index,
                      stdin="\0".join(lines).encode("utf-8", "surrogateescape") + b"\0")
        return (await git(root, "write-tree", index=index)).decode().strip()
    finally:
        index.unlink(missing_ok=True)
