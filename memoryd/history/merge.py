"""Two versions of one memory made into one, by rules every machine applies alike.

Used wherever two copies of a memory meet: a sync's merge of two machines' commits
(sync.py's plan) and a conflict copy another sync tool left beside a file (Syncthing's
`*.sync-conflict-*`, Dropbox's `(conflicted copy)`: store/copies.py).

- The result is the version with the higher `version`; on a tie the later
  `updated_at`; on a tie still, the text whose sha256 sorts last. (Any machine
  computes the same winner from the same two texts: the text stands in for a machine
  id, which a memory's file does not carry.)
- The other version is kept as a superseded version (`replaced_by` its own id, under
  trash/versions/, as an update keeps the text it replaces), unless its content is the
  winner's: then nothing of it is lost by dropping it.
- A side whose only change (from the version both started from, or from the other
  side) is the reads it counted (`access_count`, `last_accessed_at`) made no edit: the
  other side's version wins, with the reads of both, and nothing is kept or reported
  (`quiet`). Every other merge names the rule that chose (`rule`).
- Sets merge as sets: `tags`, `links`, `replaces`, `derived_from`, and the user's own
  front-matter keys. With the version both started from (`base`), what one side took
  out stays out; without it, the union.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from memoryd.schema import MAX_LINKS, Memory, as_aware
from memoryd.store import frontmatter

SETS = ("tags", "links", "replaces", "derived_from")
# Where the memories of these ids have their files (what a merged file's `wikilinks`
# name): the engine's catalog answers it.
Names = Callable[[Iterable[str]], Awaitable[dict[str, str]]]


@dataclass(frozen=True)
class Copy:
    """One version of a memory: where its file is, the file's text, what it holds."""

    path: str
    text: str
    memory: Memory

    @property
    def rank(self) -> tuple[int, float, str]:
        return (self.memory.version, as_aware(self.memory.updated_at).timestamp(),
                hashlib.sha256(self.text.encode("utf-8")).hexdigest())


HIGHER_VERSION = "the higher version wins"
LATER_EDIT = "the same version: the later edit wins"
SAME_TIME = "the same version and time: the text every machine picks the same way"


@dataclass(frozen=True)
class Merged:
    winner: Copy
    text: str  # the winner's file, with the sets of both
    kept: Memory | None  # the loser, to keep as a superseded version (None: same content)
    loser_path: str
    first_won: bool  # the first of the two given
    rule: str  # what chose the winner
    quiet: bool  # no edit met another: only reads were counted apart (nothing to report)


def _reads_only(a: Memory, b: Memory) -> bool:
    """Whether two versions differ in the reads they counted at most."""
    def unread(m: Memory) -> Memory:
        return msgspec.structs.replace(m, access_count=0, last_accessed_at=None)
    return unread(a) == unread(b)


def _rule(winner: Memory, loser: Memory) -> str:
    if winner.version != loser.version:
        return HIGHER_VERSION
    if as_aware(winner.updated_at) != as_aware(loser.updated_at):
        return LATER_EDIT
    return SAME_TIME


def read(path: str, text: str) -> Copy | None:
    """The memory a file's text holds, or None when it holds none memoryd takes."""
    try:
        parsed = frontmatter.parse(text, "")
    except frontmatter.FrontMatterError:
        return None
    return Copy(path, text, parsed.memory) if "id" in parsed.present else None


def _merged_list(base: list[Any] | None, ours: list[Any], theirs: list[Any]) -> list[Any]:
    """`ours` then what `theirs` added; without what either took out of `base`."""
    if base is None:
        return [*dict.fromkeys([*ours, *theirs])]
    out = [x for x in ours if x in theirs or x not in base]
    out += [x for x in theirs if x not in base and x not in out]
    return out


def _merged_extra(base: dict[str, Any] | None, ours: dict[str, Any],
                  theirs: dict[str, Any]) -> dict[str, Any]:
    """The winner's own keys, plus those only the other side added (a key one side
    removed and the other kept unchanged stays removed)."""
    out = dict(ours)
    for key, value in theirs.items():
        if key in out:
            continue
        if base is not None and key in base and base[key] == value:
            continue  # the winner removed it
        out[key] = value
    return out


def merge(a: Copy, b: Copy, base: Memory | None = None,
          names: Mapping[str, str] | None = None) -> Merged:
    """The two versions as one (the module's rules); `a` and `b` hold one id. `names`:
    the linked memories' file names, for the `wikilinks` of a file written anew."""
    winner, loser = (a, b) if a.rank >= b.rank else (b, a)
    quiet = _reads_only(a.memory, b.memory)
    if base is not None and not quiet:
        a_read, b_read = _reads_only(a.memory, base), _reads_only(b.memory, base)
        quiet = a_read or b_read
        if a_read != b_read:  # the one that edited wins, whatever a flush did to ranks
            winner, loser = (b, a) if a_read else (a, b)
    merged = msgspec.structs.replace(winner.memory)
    changed = False
    for name in SETS:
        value = _merged_list(getattr(base, name) if base else None,
                             getattr(winner.memory, name), getattr(loser.memory, name))
        if name != "tags":
            value = [x for x in value if x != merged.id][:MAX_LINKS]
        if value != getattr(winner.memory, name):
            setattr(merged, name, value)
            changed = True
    # Reads on either machine count: the most accesses and the latest (decay, upgrade).
    if loser.memory.access_count > merged.access_count:
        merged.access_count, changed = loser.memory.access_count, True
    seen = [t for t in (merged.last_accessed_at, loser.memory.last_accessed_at) if t]
    if seen and max(seen, key=as_aware) != merged.last_accessed_at:
        merged.last_accessed_at, changed = max(seen, key=as_aware), True
    extra = _merged_extra(base.extra if base else None, winner.memory.extra,
                          loser.memory.extra)
    if extra != winner.memory.extra:
        merged.extra, changed = extra, True
    text = frontmatter.render(merged, names).decode("utf-8") if changed else winner.text
    kept = None
    if loser.memory.content != winner.memory.content and not quiet:
        kept = msgspec.structs.replace(loser.memory, replaced_by=loser.memory.id)
    return Merged(winner=Copy(winner.path, text, merged), text=text, kept=kept,
                  loser_path=loser.path, first_won=winner is a,
                  rule=_rule(winner.memory, loser.memory), quiet=quiet)


def as_version(memory: Memory) -> str:
    """A memory's file as a kept version (history, not a soft delete to restore)."""
    return frontmatter.render(msgspec.structs.replace(memory, replaced_by=memory.id)
                              ).decode("utf-8")
