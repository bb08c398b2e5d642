"""The memory file: YAML front matter between `---` lines, then the content.

`render` is deterministic; `parse` is lenient, because people write these files by
hand: a missing or partial front matter is filled in from defaults, a known key
with a bad value is dropped (and reported), unknown keys are kept in `extra`.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time
from typing import Any

import msgspec
import yaml

from memoryd.schema import FRONT_MATTER_FIELDS, Memory

_FIELD_IN_ERROR = re.compile(r"at `\$\.([A-Za-z_]+)")
# YAML reads these as line breaks, but PyYAML writes them raw when allow_unicode is
# on; a head containing one is dumped ASCII-escaped instead (always round-trips).
_YAML_BREAKS = ("\x85", "\u2028", "\u2029")
# Keys written even when empty, so a reader sees them; other empty optionals are omitted.
_ALWAYS_WRITTEN = {"expires_at", "tags", "links"}


class FrontMatterError(ValueError):
    """The front matter is not a YAML mapping; the file is left alone."""


class Parsed(msgspec.Struct):
    memory: Memory
    present: frozenset[str]  # front-matter keys the file had (valid ones)
    dropped: dict[str, str]  # key -> why its value was ignored


def split(text: str) -> tuple[dict[str, Any] | None, str]:
    """(front matter mapping or None, body) of a file's text."""
    text = text.removeprefix("\ufeff")
    first, sep, rest = text.partition("\n")
    if first.rstrip("\r") != "---" or not sep:
        return None, text
    lines = rest.split("\n")
    for i, line in enumerate(lines):
        if line.rstrip("\r") in ("---", "..."):
            head, body = "\n".join(lines[:i]), "\n".join(lines[i + 1 :])
            break
    else:
        raise FrontMatterError("front matter opened with `---` is never closed")
    try:
        data = yaml.safe_load(head)
    except yaml.YAMLError as exc:
        raise FrontMatterError(f"front matter is not valid YAML: {exc}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise FrontMatterError("front matter is not a mapping of keys")
    return {str(k): v for k, v in data.items()}, body


def _coerce(key: str, value: Any) -> Any:
    """Friendly readings of what people type by hand."""
    if isinstance(value, date) and not isinstance(value, datetime):
        return datetime.combine(value, time(), tzinfo=UTC)
    if key in ("tags", "links", "replaces") and isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if key in ("tags", "links", "replaces") and isinstance(value, list):
        return [str(v) for v in value if v is not None and str(v).strip()]
    if key == "id" and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


def parse(text: str, default_id: str) -> Parsed:
    data, body = split(text)
    data = data or {}
    known = {k: _coerce(k, v) for k, v in data.items() if k in FRONT_MATTER_FIELDS}
    extra = {k: v for k, v in data.items() if k not in FRONT_MATTER_FIELDS and k != "content"}
    if "content" in data:  # a `content` key in front matter would shadow the body
        extra["content"] = data["content"]
    dropped: dict[str, str] = {}
    known.setdefault("id", default_id)
    while True:
        try:
            memory = msgspec.convert(known, Memory, strict=False)
            break
        except msgspec.ValidationError as exc:
            match = _FIELD_IN_ERROR.search(str(exc))
            key = match.group(1) if match else None
            if key is None or key not in known:
                raise FrontMatterError(f"front matter: {exc}") from None
            dropped[key] = str(exc).split(" - at ")[0]
            del known[key]
            if key == "id":
                known["id"] = default_id
    memory.content = body.strip()
    memory.extra = extra
    present = frozenset(k for k in known if k in data)
    return Parsed(memory=memory, present=present, dropped=dropped)


def _yaml_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _dump(fields: dict[str, Any], allow_unicode: bool) -> str:
    return yaml.safe_dump(fields, sort_keys=False, allow_unicode=allow_unicode,
                          default_flow_style=False, width=1_000_000)


def render(memory: Memory) -> bytes:
    fields: dict[str, Any] = {}
    for key in FRONT_MATTER_FIELDS:
        value = getattr(memory, key)
        if key not in _ALWAYS_WRITTEN and (value is None or value == []):
            continue
        fields[key] = _yaml_value(value)
    for key, value in memory.extra.items():
        if key not in fields:
            fields[key] = value
    head = _dump(fields, allow_unicode=True)
    if any(ch in head for ch in _YAML_BREAKS):
        head = _dump(fields, allow_unicode=False)
    return f"---\n{head}---\n{memory.content}\n".encode()
