"""Every field of a memory through the redactor: the one boundary a memory passes before
its file is named and written (engine/unit.py calls `scrub_memory` when a change places
or stages a memory, whichever way it came in: a tool, a hook, an import, an ingest, a
sync's incoming file, a hand edit).

Text fields keep their text with `[REDACTED:<kind>]` where a secret was. A field that
names a file or a folder (an id, a session) cannot hold brackets; one holding a secret
becomes `redacted-<digest>`: the same name gives the same digest, so a session's turns
stay together and a re-import finds what it imported. The digest is scrypt's (64 bits
of it, about 10 ms a name): a name may hold a short password ("password=hunter22"), and
a plain hash of it could be tried against a list of common passwords in a blink."""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any

from memoryd.schema import MAX_SOURCE, MAX_SOURCE_PATH, MAX_TAG, MAX_TITLE, Memory, clean_tags
from memoryd.secrets.redact import Redactor

# The schema's length limits: a kind's name can be longer than the secret it replaces.
_LIMITS = {"title": MAX_TITLE, "source": MAX_SOURCE, "source_path": MAX_SOURCE_PATH}
_NAMES = ("id", "session", "source_session", "episode", "topic", "replaced_by")
_NAME_LISTS = ("links", "replaces", "derived_from")
# Between the fields of the one pass: a line break (no rule's token runs across one) and
# a NUL (no name or value of a rule holds one), so no match joins two fields.
_SEPARATOR = "\n\x00\n"
_SALT = b"memoryd: a name that held a secret"  # fixed: the same name on every machine


def redact_text(redactor: Redactor, value: str, found: Counter[str]) -> str:
    """`value` cleaned, what was cut added to `found`."""
    cleaned, cut = redactor.scrub(value)
    found.update(cut)
    return cleaned


def scrub_name(redactor: Redactor, value: str, found: Counter[str]) -> str:
    """`value` (an id, a session name), or `redacted-<digest>` if it holds a secret."""
    _, cut = redactor.scrub(value)
    if not cut:
        return value
    found.update(cut)
    digest = hashlib.scrypt(value.encode("utf-8", "surrogatepass"), salt=_SALT,
                            n=2 ** 12, r=8, p=1, dklen=8)
    return f"redacted-{digest.hex()}"


def scrub_tags(redactor: Redactor, tags: list[str], found: Counter[str]) -> list[str]:
    """The tags cleaned (a tag holds no comma: one becomes a space), each within the
    schema's length, empty and repeated ones dropped."""
    cleaned = [redact_text(redactor, tag, found).replace(",", " ").strip()[:MAX_TAG]
               for tag in tags]
    return clean_tags(cleaned)


def scrub_memory(redactor: Redactor, memory: Memory) -> Counter[str]:
    """Cut every secret out of `memory`, in place; what was cut, by kind. Already clean
    text is left as it is, so a memory passes this any number of times."""
    found: Counter[str] = Counter()
    if not (redactor.scan(memory.content) or redactor.scan(others(memory))):
        return found  # the common case: the text, then every other field in one pass

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


def others(memory: Memory) -> str:
    """Every text of `memory` but its content that `scrub_memory` cleans, as one string
    (a line break and a NUL between: no rule's match joins two fields)."""
    return _SEPARATOR.join(_strings(memory))


def _strings(memory: Memory) -> list[str]:
    out = [memory.title, memory.source, memory.source_path or "", *memory.tags]
    out += [getattr(memory, name) or "" for name in _NAMES]
    out += [v for name in _NAME_LISTS for v in getattr(memory, name)]
    out += _texts_of(memory.extra)
    return out


def _texts_of(value: Any) -> list[str]:
    """Every string in plain data, keys too."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in (*_texts_of(k), *_texts_of(v))]
    if isinstance(value, list):
        return [t for v in value for t in _texts_of(v)]
    return []


def _data(value: Any, text: Any) -> Any:
    """Plain data (a front matter's unknown keys) with every string cleaned, keys too."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, dict):
        return {text(k) if isinstance(k, str) else k: _data(v, text) for k, v in value.items()}
    if isinstance(value, list):
        return [_data(v, text) for v in value]
    return value
