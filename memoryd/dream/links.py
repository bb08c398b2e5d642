"""What dream connects: [[wikilinks]] and the same entity across categories."""

from __future__ import annotations

import re
from collections import defaultdict

from memoryd.lang.names import capitalised_runs
from memoryd.schema import Memory

WIKILINK = re.compile(r"\[\[([^\]|#\n]+)(?:[|#][^\]\n]*)?\]\]")
MAX_ENTITY_SPREAD = 12  # an entity in more memories than this is too common to link by


def _title(memory: Memory) -> str:
    first = memory.content.strip().splitlines()[0] if memory.content.strip() else ""
    return first.lstrip("# ").strip().casefold()


def wikilink_targets(notes: list[Memory]) -> list[tuple[str, str]]:
    """(source id, target id) for every [[link]] that names an id or a note's title."""
    by_key: dict[str, str] = {}
    for m in notes:
        by_key.setdefault(_title(m), m.id)
    for m in notes:
        by_key[m.id.casefold()] = m.id
    pairs = []
    for m in notes:
        for raw in WIKILINK.findall(m.content):
            target = by_key.get(raw.strip().casefold())
            if target and target != m.id and target not in m.links:
                pairs.append((m.id, target))
    return sorted(set(pairs))


def cross_category_pairs(notes: list[Memory]) -> list[tuple[str, str, str]]:
    """(a, b, entity): memories of different categories, in one scope, naming the
    same entity, not linked yet."""
    mentions: dict[tuple[str, str], list[Memory]] = defaultdict(list)
    for m in notes:
        if m.phase != "organized":
            continue
        for entity in capitalised_runs(m.content):
            mentions[(m.scope, entity)].append(m)
    pairs: dict[tuple[str, str], str] = {}
    for (_, entity), members in mentions.items():
        if len(members) < 2 or len(members) > MAX_ENTITY_SPREAD:
            continue
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                if a.category != b.category and b.id not in a.links:
                    # Two ids sorted: a pair, which tuple() types as of any length.
                    pairs.setdefault(tuple(sorted((a.id, b.id))), entity)  # type: ignore[arg-type]
    return [(a, b, e) for (a, b), e in sorted(pairs.items())]
