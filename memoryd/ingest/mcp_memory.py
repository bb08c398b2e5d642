"""The MCP reference memory server's knowledge graph (`memory.json` / `memory.jsonl` in
the folder given): one JSON object a line, an entity (`{"type": "entity", "name",
"entityType", "observations": [...]}`) or a relation (`{"type": "relation", "from",
"to", "relationType"}`), as the server writes them. Each entity becomes a note: its
name the title, its type a tag, its observations a list, its relations a list too and
links to the entities they name (both ways: `memory_backlinks`). A relation to a name
no entity has is reported as an unresolved link."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoryd.ingest import jsonl, walk
from memoryd.ingest.document import Document, Scan

FILES = ("memory.json", "memory.jsonl")
MAX_NAME = 200


@dataclass
class _Entity:
    name: str
    kind: str
    observations: list[str] = field(default_factory=list)
    relations: list[tuple[str, str]] = field(default_factory=list)  # (type, to)


def read(root: Path) -> Scan:
    scan = Scan()
    for rel, text in walk.texts(root, scan, lambda rel: rel in FILES):
        _graph(scan, rel, text)
    return scan


def _graph(scan: Scan, rel: str, text: str) -> None:
    entities: dict[str, _Entity] = {}
    relations: list[tuple[str, str, str, str]] = []  # (where, from, type, to)
    for _, where, entry in jsonl.objects(scan, rel, text):
        if not isinstance(entry, dict):
            scan.fail(where, "not a JSON object")
            continue
        if entry.get("type") == "entity":
            problem = _entity(entities, entry)
        elif entry.get("type") == "relation":
            names = [entry.get(k) for k in ("from", "relationType", "to")]
            problem = None if all(_name(n) for n in names) else (
                "a relation needs from, relationType and to, each a name")
            if problem is None:
                relations.append((where, *names))  # type: ignore[arg-type]
        else:
            problem = f"neither an entity nor a relation (type {entry.get('type')!r})"
        if problem:
            scan.fail(where, problem)
    for where, source, kind, target in relations:
        if source not in entities:
            scan.fail(where, f"a relation from {source[:80]!r}, which no entity is")
            continue
        entities[source].relations.append((kind, target))
    for entity in entities.values():
        scan.documents.append(_document(rel, entity))


def _entity(entities: dict[str, _Entity], entry: dict[str, Any]) -> str | None:
    name, kind, observations = entry.get("name"), entry.get("entityType"), entry.get(
        "observations", [])
    if not _name(name) or not _name(kind):
        return "an entity needs a name and an entityType"
    if not isinstance(observations, list) or not all(isinstance(o, str) for o in observations):
        return "observations must be a list of strings"
    known = entities.setdefault(name, _Entity(name, kind))  # type: ignore[arg-type]
    known.observations += [o for o in observations if o not in known.observations]
    return None


def _name(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value.strip()) <= MAX_NAME


def _document(rel: str, entity: _Entity) -> Document:
    lines = [f"# {entity.name}", "", f"Type: {entity.kind}", ""]
    lines += [f"- {o}" for o in entity.observations]
    if entity.relations:
        lines += ["", "Relations:"] + [f"- {kind}: {to}" for kind, to in entity.relations]
    return Document(path=f"{rel}#{entity.name}", content="\n".join(lines).strip() + "\n",
                    names=[entity.name], tags=[_tag(entity.kind)],
                    links=list(dict.fromkeys(to for _, to in entity.relations)))


def _tag(kind: str) -> str:
    """An entity type as a tag (no commas, at most 64 characters)."""
    return kind.replace(",", " ").strip()[:64]
