"""What each tool returns, as JSON Schema: MCP's `outputSchema`, which a client checks
`structuredContent` against. Deliberately open (extra keys allowed), exact about the
keys a caller relies on; tests/tools/test_results.py runs every tool and checks its
result against its schema."""

from __future__ import annotations

from typing import Any

STR = {"type": "string"}
INT = {"type": "integer"}
NUM = {"type": "number"}
BOOL = {"type": "boolean"}
OBJ = {"type": "object"}
ANY: dict[str, Any] = {}


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def array(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


def obj(**required: dict[str, Any]) -> dict[str, Any]:
    """An object with these keys, each required; others allowed."""
    return {"type": "object", "properties": required, "required": list(required)}


def more(base: dict[str, Any], **required: dict[str, Any]) -> dict[str, Any]:
    return obj(**base["properties"], **required)


MEMORY = obj(id=STR, title=STR, content=STR, kind=STR, phase=STR, category=STR, type=STR, scope=STR,
             tags=array(STR), source=STR, importance=NUM, created_at=STR, updated_at=STR,
             links=array(STR), version=INT)
MEMORIES = array(MEMORY)
RANKED = more(MEMORY, score=NUM, scores=OBJ)
ENTITY = obj(key=STR, name=STR, memories=INT, first=STR, last=STR, aliases=array(STR))

OUTPUTS: dict[str, dict[str, Any]] = {
    "memory_write": more(MEMORY, duplicate=BOOL),
    "memory_read": more(MEMORY, entities=array(STR)),
    "memory_update": MEMORY,
    "memory_delete": obj(id=STR, deleted=BOOL, trash=STR),
    "memory_list": obj(memories=MEMORIES, total=INT),
    "memory_search": obj(memories=MEMORIES, total=INT, query=STR),
    "memory_tag": MEMORY,
    "memory_link": obj(source=STR, target=STR, linked=BOOL),
    "memory_unlink": obj(source=STR, target=STR, linked=BOOL),
    "memory_backlinks": obj(id=STR, memories=MEMORIES),
    "memory_upgrade": MEMORY,
    "memory_rename": more(MEMORY, path=STR, to=STR),
    "memory_entities": obj(entities=array(ENTITY), total=INT),
    "memory_smart_search": obj(memories=array(RANKED), query=STR, top_k=INT),
    "memory_explain": obj(query=STR, top_k=INT, mode=STR, searched=INT, reranker=BOOL,
                          params=OBJ, timings_ms=OBJ, topics=array(OBJ), candidates=array(obj(
                              id=STR, content=nullable(STR), kept=BOOL, rank=nullable(INT),
                              reason=STR, scores=OBJ))),
    "memory_recall": obj(text=STR, memories=MEMORIES, recent=MEMORIES, total_tokens=INT,
                         budget_used=NUM, summary_included=BOOL),
    "memory_context": obj(text=STR, memories=MEMORIES, total_tokens=INT, budget_used=NUM),
    "memory_remember": {**obj(stored=BOOL), "properties": {
        "stored": BOOL, "id": STR, "type": STR, "importance": NUM,
        "skipped": obj(reason=STR)}},
    "memory_add": obj(path=STR, facts=array(obj(text=STR, event=STR, id=nullable(STR),
                                                reason=STR))),
    "memory_history": obj(id=STR, versions=array(obj(
        id=STR, version=INT, content=STR, created_at=STR, event=STR, current=BOOL,
        revisions=array(OBJ))), git=BOOL),
    "memory_restore": more(MEMORY, restored_from=nullable(INT)),
    "memory_trash": obj(memories=array(more(MEMORY, trash=STR)), total=INT),
    "memory_ingest": obj(reports=array(OBJ), added=INT, updated=INT, unchanged=INT,
                         dry_run=BOOL),
    "memory_export": obj(lines=array(STR), next=nullable(STR), total=INT),
    "memory_sync": obj(remote=STR, dry_run=BOOL, came_in=INT, went_out=INT,
                       resolved=array(OBJ), needs_you=array(OBJ), refused=array(OBJ),
                       error=nullable(STR)),
    "memory_purge": obj(dry_run=BOOL, occurrences=INT,
                        files=obj(memories=INT, versions=INT, trash=INT, other=INT),
                        renamed=array(STR), refused=array(STR), graph_labels=INT,
                        git=nullable(OBJ),
                        remaining=array(STR), push=nullable(STR)),
    "memory_import": obj(imported=INT, replaced=INT, kept_both=INT, skipped=INT,
                         failed=array(obj(line=INT, reason=STR))),
    "memory_remind": more(MEMORY, due_at=STR),
}
