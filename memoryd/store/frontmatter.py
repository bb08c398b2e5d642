"""The memory file: YAML front matter between `---` lines, then the content.

`render` is deterministic. `parse` takes a file as untrusted input: a missing or
partial front matter is filled in from defaults and unknown keys are kept in
`extra`, but every known key must pass the schema's rules (the same as a tool's
params), or the whole file is refused with every bad key named. The front matter
is plain data: at most 64 KiB, and YAML anchors and aliases (the "billion laughs")
are refused before anything is built.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping
from datetime import UTC, date, datetime, time
from typing import Any

import msgspec
import yaml
from yaml.emitter import Emitter

from memoryd.lang.titles import titled
from memoryd.schema import FRONT_MATTER_FIELDS, Memory, field_of, is_valid_id, new_id

MAX_FRONT_MATTER = 64 * 1024  # characters between the `---` lines
# YAML reads these as line breaks, but PyYAML writes them raw when allow_unicode is
# on; a head containing one is dumped ASCII-escaped instead (always round-trips).
_YAML_BREAKS = ("\x85", "\u2028", "\u2029")
# Keys written even when empty, so a reader sees them; other empty optionals are omitted.
_ALWAYS_WRITTEN = {"expires_at", "tags", "links"}
# Flags written only when set (most memories are not pending, compressed, ...).
_OMITTED_WHEN_FALSE = {"pending", "compressed", "compression_source"}
# The links again, as [[file name]] an editor (Obsidian) reads as links: written from
# `links` (the ids, the truth) with each target's file name, never read back.
WIKILINKS = "wikilinks"


class FrontMatterError(ValueError):
    """The file cannot be taken as a memory (bad YAML, bad fields); it is left alone."""


class InvalidFields(FrontMatterError):
    def __init__(self, problems: dict[str, str]) -> None:
        super().__init__("invalid front matter: " + "; ".join(
            f"{key}: {why}" for key, why in problems.items()))
        self.problems = problems


_ANCHORS = ("front matter uses YAML anchors or aliases (&name, *name); memoryd reads "
            "plain values only")
_TOO_DEEP = "front matter is nested too deeply"
MAX_DEPTH = 64  # nested lists and mappings; memoryd's own front matter uses 2


# libyaml when PyYAML has it (its wheels do): 6x faster than the pure-Python parser,
# which bounded a rebuild's reading of files (0.8 of 1.9 ms a file).
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_OPENS = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSES = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


def _load(head: str) -> Any:
    """The front matter's data, built by the safe constructor after a first pass over the
    parser's events refused anchors and aliases (front matter is plain data, and an
    alias is how a 512-byte file expands to gigabytes) and nesting deeper than MAX_DEPTH
    (the parser keeps its own stack: no input exhausts ours)."""
    depth = 0
    for event in yaml.parse(head, Loader=_Loader):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise FrontMatterError(_ANCHORS)
        if isinstance(event, _OPENS):
            depth += 1
            if depth > MAX_DEPTH:
                raise FrontMatterError(_TOO_DEEP)
        elif isinstance(event, _CLOSES):
            depth -= 1
    return yaml.load(head, Loader=_Loader)  # a SafeLoader


class Parsed(msgspec.Struct):
    memory: Memory
    present: frozenset[str]  # front-matter keys the file had


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
    if len(head) > MAX_FRONT_MATTER:
        raise FrontMatterError(f"front matter is {len(head)} characters; at most "
                               f"{MAX_FRONT_MATTER} are read")
    try:
        data = _load(head)
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(exc):  # libyaml's own limit (PyYAML 6.0.4 on),
            raise FrontMatterError(_TOO_DEEP) from None  # met while it reads ahead
        raise FrontMatterError(f"front matter is not valid YAML: {exc}") from None
    except RecursionError:
        raise FrontMatterError(_TOO_DEEP) from None
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
    """The memory a file holds; FrontMatterError (InvalidFields: every bad key named)
    when it cannot be taken as one. A missing id is the file name's (or a new one)."""
    data, body = split(text)
    data = data or {}
    known = {k: _coerce(k, v) for k, v in data.items() if k in FRONT_MATTER_FIELDS}
    extra = {k: v for k, v in data.items()
             if k not in FRONT_MATTER_FIELDS and k not in ("content", WIKILINKS)}
    if "content" in data:  # a `content` key in front matter would shadow the body
        extra["content"] = data["content"]
    known["content"] = body.strip()
    if "id" not in known:
        known["id"] = default_id if is_valid_id(default_id) else new_id()
    problems: dict[str, str] = {}
    while True:
        try:
            memory = msgspec.convert(known, Memory, strict=False)
            break
        except msgspec.ValidationError as exc:
            key, why = field_of(exc)
            if key is None or key not in known:
                raise FrontMatterError(f"front matter: {exc}") from None
            problems[key] = why
            del known[key]  # to find the other bad keys too
            if key == "id":
                known["id"] = new_id()
    if problems:
        raise InvalidFields(problems)
    memory.extra = extra
    titled(memory)  # a file without one (a hand-written note) shows its derived title
    return Parsed(memory=memory, present=frozenset(k for k in known if k in data))


def _yaml_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return value


# libyaml's emitter when PyYAML has it (the wheels do): 5x faster than the Python one,
# a tenth of a write's time. Both write the same YAML but for characters like NEL, which
# libyaml escapes in double quotes; each reads back the same.
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _dump(fields: dict[str, Any], allow_unicode: bool) -> str:
    return str(yaml.dump(fields, Dumper=_Dumper, sort_keys=False,
                         allow_unicode=allow_unicode, default_flow_style=False,
                         width=1_000_000))


# A string PyYAML writes as it is, or in single quotes when it would read back as another
# type ('2026', 'yes', a date): ASCII, starting with a letter or digit, no YAML indicator
# in it, a colon only before a digit, single spaces only between words.
_SIMPLE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.+/-]|:(?=[0-9])| (?=[A-Za-z0-9_.+/-]))*")
_STR = "tag:yaml.org,2002:str"


def _fast_scalar(value: Any) -> str | None:
    """`value` as PyYAML's dumper writes it when that is simple to know, else None."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    if type(value) is float:
        text = repr(value)
        return text if "." in text and "e" not in text and math.isfinite(value) else None
    if type(value) is str:
        if not value:
            return "''"
        plain = _Dumper.resolve(_Dumper, yaml.ScalarNode, value, (True, False)) == _STR
        if _SIMPLE.fullmatch(value) is None:
            return _analysed(value, plain)
        return value if plain else f"'{value}'"
    return None


# PyYAML's own look at a string (a title with punctuation: "Ann, Bea: notes"), to write
# it as its emitter would without building the document; a string its emitter would put
# in double quotes (control characters, line breaks) is left to it.
_ANALYSER = Emitter(io.StringIO(), allow_unicode=True)


def _analysed(value: str, resolves_to_str: bool) -> str | None:
    analysis = _ANALYSER.analyze_scalar(value)
    if analysis.multiline or not analysis.allow_single_quoted:
        return None
    if resolves_to_str and analysis.allow_block_plain:
        return value
    return "'" + value.replace("'", "''") + "'"


def fast_head(fields: dict[str, Any]) -> str | None:
    """The front matter as `_dump` writes it, for fields of plain values and lists of
    them (PyYAML's representer is most of a write's rendering time); None when any
    value is not simple (tests check both give the same bytes)."""
    if not fields:
        return None
    lines: list[str] = []
    for key, value in fields.items():
        if type(value) is list:
            if not value:
                lines.append(f"{key}: []")
                continue
            lines.append(f"{key}:")
            for item in value:
                text = _fast_scalar(item)
                if text is None:
                    return None
                lines.append(f"- {text}")
        else:
            text = _fast_scalar(value)
            if text is None:
                return None
            lines.append(f"{key}: {text}")
    lines.append("")
    return "\n".join(lines)


def fields_of(memory: Memory, names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The front matter's keys; `names`: each linked memory's file name (its stem), for
    the `wikilinks` written after `links`."""
    fields: dict[str, Any] = {}
    for key in FRONT_MATTER_FIELDS:
        value = getattr(memory, key)
        if key not in _ALWAYS_WRITTEN and (value is None or value == [] or (
                key in _OMITTED_WHEN_FALSE and value is False) or (key == "title" and not value)):
            continue
        fields[key] = _yaml_value(value)
        if key == "links" and names:
            linked = [f"[[{names[i]}]]" for i in memory.links if i in names]
            if linked:
                fields[WIKILINKS] = linked
    for key, value in memory.extra.items():
        if key not in fields and key not in FRONT_MATTER_FIELDS:  # never a field's stand-in
            fields[key] = value
    return fields


def yaml_head(fields: dict[str, Any]) -> str:
    head = _dump(fields, allow_unicode=True)
    if any(ch in head for ch in _YAML_BREAKS):
        head = _dump(fields, allow_unicode=False)
    return head


def check_readable(memory: Memory) -> None:
    """FrontMatterError unless the file `render` makes would be read back: a user's own
    keys (`extra`) could make a front matter past MAX_FRONT_MATTER."""
    if memory.extra and len(yaml_head(fields_of(memory))) > MAX_FRONT_MATTER:
        raise FrontMatterError(f"the front matter would be over {MAX_FRONT_MATTER} "
                               "characters (its `extra` keys): the file could not be read")


def render(memory: Memory, names: Mapping[str, str] | None = None) -> bytes:
    """The file. `names` (each linked memory's file name) adds the `wikilinks`, unless
    they would take the front matter past what `parse` reads (a memory of a thousand
    links): the links themselves are never left out."""
    fields = fields_of(memory, names)
    head = _head(fields, memory)
    if len(head) > MAX_FRONT_MATTER and fields.pop(WIKILINKS, None) is not None:
        head = _head(fields, memory)
    return f"---\n{head}---\n{memory.content}\n".encode()


def _head(fields: dict[str, Any], memory: Memory) -> str:
    head = fast_head(fields) if not memory.extra else None
    return yaml_head(fields) if head is None else head
