"""A string taken out of the root's whole git history (memoryctl purge).

The history is rewritten locally: `git fast-export` of every branch and tag, each blob,
commit message and path with the string replaced, `git fast-import --force` back over
the same refs. What still reaches the old objects goes next (the reflogs, the
remote-tracking refs, memoryd's merge index), then `git gc --prune=now` drops them. The
commits are new, so a remote still has the old history: `PENDING` records the new head
until the user force-pushes it (the sync refuses to merge the old history back
meanwhile, engine/remote.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from memoryd.history.remote import FETCHED
from memoryd.history.runner import git, head_of

PENDING = "memoryd-purged"  # in .git/: the head a purge left, until the remote has it
REPLACEMENT = b"[PURGED]"  # in a text
# In a memory file's front matter the marker is a plain word: `[PURGED]` opening a YAML
# value (`title: [PURGED]`, `- [PURGED]`) would read as a list.
HEAD_REPLACEMENT = b"PURGED"
NAME_REPLACEMENT = b"purged"  # in a file's name (engine/purge.py renames the file so)
_HEAD_END = b"\n---\n"


def replaced(data: bytes, needle: bytes) -> bytes:
    """`data` (a file) without `needle`: a memory file's front matter gets the plain
    marker, its text and any other file `[PURGED]`."""
    if data.startswith(b"---\n") and (end := data.find(_HEAD_END, 3)) > 0:
        head, body = data[:end], data[end:]
        return head.replace(needle, HEAD_REPLACEMENT) + body.replace(needle, REPLACEMENT)
    return data.replace(needle, REPLACEMENT)
_DATA = re.compile(rb"data (\d+)\n")


@dataclass
class Rewritten:
    blobs: int = 0  # file versions that held the string
    messages: int = 0  # commit messages that held it
    paths: int = 0  # file names that held it
    commits: int = 0  # the commits of the history (all are rewritten)


def rewrite_stream(stream: bytes, needle: bytes) -> tuple[bytes, Rewritten]:
    """A fast-export stream with `needle` replaced everywhere, its `data` lengths kept
    right; what was changed."""
    out: list[bytes] = []
    done = Rewritten()
    at, kind = 0, b""
    while at < len(stream):
        end = stream.find(b"\n", at)
        end = len(stream) if end < 0 else end + 1
        line = stream[at:end]
        match = _DATA.fullmatch(line)
        if match is None:
            head = line.rstrip(b"\n").split(b" ", 1)[0]
            if head in (b"blob", b"commit", b"tag"):
                kind = head
                done.commits += head == b"commit"
            if needle in line and head in (b"M", b"D", b"R", b"C", b"N"):
                done.paths += 1
                line = line.replace(needle, NAME_REPLACEMENT)
            out.append(line)
            at = end
            continue
        size = int(match.group(1))
        body = stream[end:end + size]
        if needle in body:
            body = replaced(body, needle)
            if kind == b"blob":
                done.blobs += 1
            else:
                done.messages += 1
        out += [b"data %d\n" % len(body), body]
        at = end + size
    return b"".join(out), done


async def purge_history(root: Path, needle: bytes, dry_run: bool) -> Rewritten:
    """Rewrite every branch and tag without `needle`; nothing when no commit holds it."""
    if await head_of(root) is None:
        return Rewritten()
    stream = await git(root, "fast-export", "--branches", "--tags", "--signed-tags=strip",
                       "--tag-of-filtered-object=rewrite", "--reencode=yes")
    rewritten, done = rewrite_stream(stream, needle)
    if dry_run or not (done.blobs or done.messages or done.paths):
        return done
    await git(root, "fast-import", "--force", "--quiet", stdin=rewritten)
    await git(root, "read-tree", "HEAD")  # the index of the new head (the files agree)
    refs = (await git(root, "for-each-ref", "--format=%(refname)", "refs/remotes",
                      "refs/original", "refs/stash", FETCHED)).decode().split()
    for ref in refs:  # they reach the old commits; a fetch brings the remote's back
        await git(root, "update-ref", "-d", ref)
    (root / ".git" / "memoryd-merge.index").unlink(missing_ok=True)
    await git(root, "reflog", "expire", "--expire=now", "--all")
    await git(root, "gc", "--prune=now", "--quiet")
    head = await head_of(root)
    (root / ".git" / PENDING).write_text(f"{head}\n")
    return done


async def objects(root: Path) -> bytes:
    """Every object of the repository, uncompressed (to search for what a purge left)."""
    return await git(root, "cat-file", "--batch-all-objects", "--batch")


def pending(root: Path) -> str | None:
    """The head a purge left, while the remote may still hold the old history."""
    try:
        return (root / ".git" / PENDING).read_text().strip() or None
    except OSError:
        return None


def settled(root: Path) -> None:
    """The remote has the rewritten history now."""
    (root / ".git" / PENDING).unlink(missing_ok=True)
