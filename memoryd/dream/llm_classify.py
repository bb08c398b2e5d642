"""Classification by the LLM (dream level 1, when llm.url is set).

Inbox memories go to the model in batches of llm.batch_size, numbered; it answers a
JSON object {number: category}. An answer of "inbox" means nothing fits (the memory
stays). A memory the model skipped, answered with an unknown category, or a whole
batch that failed is left to the heuristics (`classify.classify`).
"""

from __future__ import annotations

from memoryd.llm.client import LlmError
from memoryd.ports import ChatModel

CATEGORY_MEANINGS = {
    "soul": "core identity, values, mission",
    "character": "personality traits, communication style",
    "people": "people and relationships",
    "project": "project context, repos, deployments",
    "date": "time expressions, deadlines, schedules",
    "knowledge": "technical knowledge, facts, patterns",
    "feedback": "feedback, suggestions, improvements",
    "preferences": "user or agent preferences",
    "decisions": "design decisions, choices made",
    "lessons": "lessons learned, gotchas",
    "habits": "behavioural patterns, routines",
    "skills": "skills, capabilities",
    "reminders": "time-based reminders",
    "inbox": "none of the above fits",
}
SYSTEM = (
    "You sort an assistant's memories into categories. The categories:\n"
    + "\n".join(f"- {name}: {meaning}" for name, meaning in CATEGORY_MEANINGS.items())
    + "\nMemories may be in any language. Answer with one JSON object only, mapping each"
    " memory's number to exactly one category name, e.g. {\"1\": \"preferences\"}.")
MAX_CHARS = 1000  # of each memory, in the prompt


async def classify(client: ChatModel, contents: list[str], batch_size: int
                   ) -> list[str | None]:
    """The model's category per content (`"inbox"`: nothing fits; None: no usable
    answer, use the heuristics)."""
    out: list[str | None] = [None] * len(contents)
    for start in range(0, len(contents), batch_size):
        chunk = contents[start:start + batch_size]
        prompt = "\n\n".join(f"{i + 1}. {text[:MAX_CHARS]}" for i, text in enumerate(chunk))
        numbers = [str(i + 1) for i in range(len(chunk))]
        schema = {"type": "object", "additionalProperties": False, "required": numbers,
                  "properties": {n: {"type": "string", "enum": list(CATEGORY_MEANINGS)}
                                 for n in numbers}}
        try:
            answer = await client.ask_task("classify", schema, SYSTEM, prompt,
                                           max_tokens=20 * len(chunk) + 50)
        except LlmError:
            continue
        for i in range(len(chunk)):
            category = answer.get(str(i + 1))
            if isinstance(category, str) and category.strip().lower() in CATEGORY_MEANINGS:
                out[start + i] = category.strip().lower()
    return out
