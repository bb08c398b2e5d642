"""The LLM tasks of conversation memory: TASK name, system prompt, answer schema
(docs/jobs.md, "The LLM contract"). Each answer is checked by its caller; none is trusted."""

from __future__ import annotations

from typing import Any


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False,
            "required": list(properties), "properties": properties}


_STRINGS = {"type": "array", "items": {"type": "string"}}

FACTS = "facts"
FACTS_SCHEMA = _object({"facts": _STRINGS | {"maxItems": 3}})
FACTS_SYSTEM = (
    "You extract durable facts about the user from the user's message. Answer with 0 to 3"
    " concise, atomic, standalone statements in the third person (\"The user ...\"), in the"
    " message's language. Ignore questions, requests, greetings and acknowledgements. "
    "Example: \"My wife is Anne\" -> {\"facts\": [\"The user's wife is named Anne\"]}. "
    "Answer with the JSON object only.")

RECONCILE = "reconcile"
RECONCILE_SCHEMA = _object({"memory": {"type": "array", "items": _object({
    "id": {"type": "string"}, "text": {"type": "string"},
    "event": {"type": "string", "enum": ["ADD", "UPDATE", "DELETE", "NONE"]}})}})
RECONCILE_SYSTEM = (
    "You keep a user's memory current. Compare new_facts with existing_memories (id +"
    " text) and decide, for each, one event: ADD (new information; any id), UPDATE (it"
    " refines or changes an existing memory: that memory's id, and the new text), DELETE"
    " (it contradicts an existing memory: that memory's id; the replacing fact must also"
    " be returned, as ADD or UPDATE), NONE (already known: the existing memory's id). "
    "Ids for UPDATE, DELETE and NONE must come from existing_memories. Examples: \"I love"
    " pizza\" known, \"The user hates pizza\" new -> UPDATE that id with the new text. "
    "Answer {\"memory\": [{\"id\", \"text\", \"event\"}, ...]} only, no prose.")

SUMMARY = "summary"
SUMMARY_SCHEMA = _object({"summary": {"type": "string"}})
SUMMARY_SYSTEM = (
    "You maintain a concise running summary of a conversation with the user. Given the"
    " previous summary, new facts and recent turns, answer the updated summary: aggregate"
    " related facts, drop chit-chat, keep durable information (names, numbers, decisions)."
    " At most 8 sentences. Answer {\"summary\": \"...\"} only.")

IMPORTANCE = "importance"
IMPORTANCE_SCHEMA = _object({"importance": {"type": "number"}})
IMPORTANCE_SYSTEM = (
    "Rate how important it is to remember this message from a conversation, from 0 to 1: "
    "0.7-1.0 facts, decisions, rules, technical choices, deadlines; 0.4-0.6 useful context,"
    " questions with domain content; 0.0-0.3 small talk and filler. Answer"
    " {\"importance\": number} only.")

COMPRESS = "compress"
COMPRESS_SCHEMA = _object({"summary": {"type": "string"}})
COMPRESS_SYSTEM = (
    "Summarize the following conversation into 2-3 sentences capturing key facts, "
    "decisions, and topics discussed. Be specific and preserve names, numbers, and "
    "technical details. Do not include pleasantries. Answer {\"summary\": \"...\"} only.")


def strings(answer: dict[str, Any], key: str, limit: int, max_chars: int = 500) -> list[str]:
    """The non-empty strings of answer[key] (at most `limit`), or ValueError."""
    value = answer.get(key)
    if not isinstance(value, list):
        raise ValueError(f"the answer has no `{key}` list")
    out = [" ".join(v.split())[:max_chars] for v in value if isinstance(v, str)]
    return [v for v in out if v][:limit]


def text(answer: dict[str, Any], key: str, max_chars: int = 4000) -> str:
    value = answer.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"the answer has no `{key}` text")
    return value.strip()[:max_chars]


def number(answer: dict[str, Any], key: str) -> float:
    value = answer.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ValueError(f"the answer's `{key}` is not a number from 0 to 1")
    return float(value)
