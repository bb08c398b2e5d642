"""The redactor: every text the daemon is given to write (a note, an update, a turn, a
fact, an ingested note or transcript, an imported line) goes through `scrub` before
anything is written, embedded or logged. A secret becomes `[REDACTED:<kind>]`; a
`<private>…</private>` span is dropped whole. Kinds can be turned off in config
(`redaction.disabled`), for a user who wants them stored."""

from __future__ import annotations

import re
import threading
from collections import Counter, OrderedDict
from functools import partial

from memoryd.secrets.rules import KINDS, MARKER_OPEN, RULES, Rule, entropy, haystack, marker

_PRIVATE = re.compile(r"<private>[\s\S]*?(?:</private>|$)", re.I)
CLEAN_KEPT = 50_000  # texts remembered clean (a hash each: about 4 MB at most)
_UUID = re.compile(r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}", re.I)


class Redactor:
    def __init__(self, off: list[str] | tuple[str, ...] = ()) -> None:
        unknown = set(off) - set(KINDS)
        if unknown:
            raise ValueError(f"no such secret rule: {', '.join(sorted(unknown))} "
                             f"(the rules: {', '.join(KINDS)})")
        self.off = frozenset(off)
        self._rules = [r for r in RULES if r.kind not in self.off]
        self._lock = threading.Lock()
        self.total: Counter[str] = Counter()  # redacted since the daemon started
        # Hashes of texts found clean, oldest first. An OrderedDict: a dict's first key,
        # after many deleted before it, is found by walking past their empty slots.
        self._clean: OrderedDict[int, None] = OrderedDict()

    def scrub(self, text: str, record: bool = True) -> tuple[str, Counter[str]]:
        """`text` without its secrets, and how many of each kind were cut (added to
        `total` unless not `record`)."""
        found: Counter[str] = Counter()
        # A text found clean is remembered (its hash, a bounded number of them): one
        # text is checked by an ingest, by the write, when the write places and stages
        # it, and at every later change of another field (its links, its access count).
        key = hash(text)
        with self._lock:
            if key in self._clean:
                return text, found
        if "private" not in self.off and "<" in text:
            text, n = _PRIVATE.subn("", text)
            if n:
                found["private"] += n
        hay = haystack(text)
        for rule in self._rules:
            # Inline: at a microsecond or two a rule, a call would be most of the cost.
            if rule.hinted is not None:
                if rule.hinted.search(hay) is None:
                    continue
            elif rule.hints:
                for hint in rule.hints:
                    if hint in hay:
                        break
                else:
                    continue
            text = rule.pattern.sub(partial(_cut, rule=rule, found=found), text)
        with self._lock:
            if found and record:
                self.total.update(found)
            elif not found:
                self._clean[key] = None
                if len(self._clean) > CLEAN_KEPT:
                    self._clean.popitem(last=False)
        return text, found

    def scan(self, text: str) -> int:
        """How many secrets `scrub` would cut from `text` (nothing counted)."""
        return sum(self.scrub(text, record=False)[1].values())

    def clean(self, text: str) -> str:
        """`scrub`'s text alone."""
        return self.scrub(text)[0]

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self.total)


def _random(token: str, least: float) -> bool:
    """A token random enough to be a key: letters and digits mixed, not a UUID, at
    least `least` bits a character ("hook-ui-page-file-mounted" is words); with a "/"
    (base64), both cases too ("docs/v2/setup2024" is a path)."""
    return (any(c.isdigit() for c in token) and any(c.isalpha() for c in token)
            and ("/" not in token or (any(c.isupper() for c in token)
                                      and any(c.islower() for c in token)))
            and not _UUID.fullmatch(token) and not token.startswith("AAAA")  # ssh public
            and entropy(token) >= least)


# What ends a sentence or a clause is not part of the secret before it.
_TRAILING = ".,:;!?"


def _cut(match: re.Match[str], rule: Rule, found: Counter[str]) -> str:
    secret = match.group(rule.group)
    if secret is None or secret.startswith(MARKER_OPEN):
        return match.group(0)
    start, end = match.span(rule.group)
    if rule.kind != "private-key":
        kept = secret.rstrip(_TRAILING)
        end -= len(secret) - len(kept)
        secret = kept
    if (rule.entropy and not _random(secret, rule.entropy)) or (
            rule.check is not None and not rule.check(secret)):
        return match.group(0)
    found[rule.kind] += 1
    whole = match.group(0)
    base = match.start()
    return whole[:start - base] + marker(rule.kind) + whole[end - base:]
