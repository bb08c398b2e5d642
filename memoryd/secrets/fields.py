"""Every field of a memory through the redactor: the one boundary a memory passes before
its file is named and written (engine/unit.py calls `scrub_memory` when a change places
or stages a memory, whichever way it came in: a tool, a hook, an import, an ingest, a
sync's incoming file, a hand edit).

Text fields keep their text with `[REDACTED:<kind>]` where a secret was. A field that
names a file or a folder (an id, a session) cannot hold brackets; one holding a secret
becomes `redacted-<digest>`: the same secret gives the same name, so a session's turns
stay together and a re-import finds what it imported, and the digest (of a secret at
least 20 characters long, cut to 64 bits) says nothing of it."""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any

from memoryd.schema import Memory
from memoryd.secrets.redact import Redactor

# The schema's length limits: a kind's name can be longer than the secret it replaces.
_LIMITS = {"title": 200, "source": 128, "source_path": 1024}
_TAG_LIMIT = 64
_NAMES = ("id", "session", "source_session", "episode", "topic", "replaced_by")
_NAME_LISTS = ("links", "replaces", "derived_from")


def redact_text(redactor: Redactor, value: str, found: Counter[str]) -> str:
    """`value` cleaned, what was cut added to `found`."""
    cleaned, cut = redactor.scrub(value)
    found.update(cut)
    return cleaned


def scrub_name(redactor: Redactor, value: str, found: Counter[str] | None = None) -> str:
    """`value` (an id, a session name), or `redacted-<digest>` if it holds a secret."""
    _, cut = redactor.scrub(value)
    if not cut:
        return value
    if found is not None:
        found.update(cut)
    return "redacted-" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def scrub_tags(redactor: Redactor, tags: list[str], found: Counter[str] | None = None
               ) -> list[str]:
    out: dict[str, None] = {}
    for tag in tags:
        cleaned, cut = redactor.scrub(tag)
        if found is not None:
            found.update(cut)
        cleaned = cleaned.replace(",", " ").strip()[:_TAG_LIMIT]
        if cleaned:
            out.setdefault(cleaned, None)
    return list(out)


def scrub_memory(redactor: Redactor, memory: Memory) -> Counter[str]:
    """Cut every secret out of `memory`, in place; what was cut, by kind. Already clean
    text is left as it is, so a memory passes this any number of times."""
    found: Counter[str] = Counter()

    def text(value: str) -> str:
        return redact_text(redactor, value, found)

    memory.content = text(memory.content)
    for name, limit in _LIMITS.items():
        value = getattr(memory, name)
        if value:
            setattr(memory, name, text(value)[:limit])
    memory.tags = scrub_tags(redactor, memory.tags, found)
    for name in _NAMES:
        value = getattr(memory, name)
        if value:
            setattr(memory, name, scrub_name(redactor, value, found))
    for name in _NAME_LISTS:
        values = getattr(memory, name)
        if values:
            setattr(memory, name, [scrub_name(redactor, v, found) for v in values])
    if memory.extra:
        memory.extra = _data(memory.extra, text)
    return found


def _data(value: Any, text: Any) -> Any:
    """Plain data (a front matter's unknown keys) with every string cleaned, keys too."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, dict):
        return {text(k) if isinstance(k, str) else k: _data(v, text) for k, v in value.items()}
    if isinstance(value, list):
        return [_data(v, text) for v in value]
    return value
