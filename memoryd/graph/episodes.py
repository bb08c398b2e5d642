"""Episodes from conversation turns, and the graph rebuilt from the files.

A turn is cold when it is older than `min_age` and its recency, exp(-age / half_life)
with age counted from its last access, is below `cold_below`. Turns pair by time: a
user turn and the assistant turn after it (same scope and session, within
`pair_window`) are one episode, embedded as "User: ...\\nAssistant: ..."; a turn
without a partner is an episode alone. A pair is swept once all its turns are cold.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from datetime import datetime

import numpy as np

from memoryd.graph.store import Episode
from memoryd.graph.topics import TopicGraph
from memoryd.schema import Memory, new_id

LABEL_CHARS = 80
_SPACE = re.compile(r"\s+")
Embed = Callable[[list[str]], np.ndarray]


def is_cold(turn: Memory, now: datetime, half_life: float, cold_below: float,
            min_age: float) -> bool:
    """Older than min_age, and recency exp(-age / half_life) below cold_below; age counts
    from the last access."""
    last = max(turn.created_at, turn.last_accessed_at or turn.created_at)
    age = max(0.0, (now - last).total_seconds())
    return age >= min_age and math.exp(-age / half_life) < cold_below


def pair_turns(turns: Iterable[Memory], window: float) -> list[list[Memory]]:
    """Turns (ordered by scope, session, time) grouped into episodes of one or two."""
    ordered = list(turns)
    episodes: list[list[Memory]] = []
    i = 0
    while i < len(ordered):
        turn = ordered[i]
        reply = ordered[i + 1] if i + 1 < len(ordered) else None
        if (reply is not None and turn.role == "user" and reply.role == "assistant"
                and (reply.scope, reply.session) == (turn.scope, turn.session)
                and (reply.created_at - turn.created_at).total_seconds() <= window):
            episodes.append([turn, reply])
            i += 2
        else:
            episodes.append([turn])
            i += 1
    return episodes


def episode_text(turns: list[Memory]) -> str:
    return "\n".join(f"{'Assistant' if t.role == 'assistant' else 'User'}: {t.content}"
                     for t in turns)


def label(turns: list[Memory]) -> str:
    """The node label: the user's words if there are any (first 80 characters)."""
    first = next((t for t in turns if t.role == "user"), turns[0])
    return _SPACE.sub(" ", first.content).strip()[:LABEL_CHARS]


def build(groups: list[list[Memory]], embed: Embed,
          ids: list[str] | None = None) -> list[Episode]:
    """Episodes for these turn groups (one model call), in time order."""
    if not groups:
        return []
    vectors = embed([episode_text(g) for g in groups])
    episodes = [
        Episode(id=ids[i] if ids else new_id(), scope=g[0].scope, turns=[t.id for t in g],
                label=label(g), importance=max(t.importance for t in g), vector=vectors[i],
                created_at=g[0].created_at.timestamp())
        for i, g in enumerate(groups)]
    return sorted(episodes, key=lambda e: (e.created_at, e.id))


def reconcile(graph: TopicGraph, on_file: dict[str, tuple[str, str | None]],
              load: Callable[[list[str]], list[Memory]], embed: Embed
              ) -> dict[str, tuple[str, str]]:
    """Make the graph's episodes and nodes what the turn files say (`on_file`: turn id ->
    (episode, topic)). An empty graph is rebuilt whole; node ids come from the files.
    Returns turn id -> (episode, topic) for turns whose file lacks its topic."""
    wanted: dict[str, tuple[str | None, list[str]]] = {}
    for turn_id, (episode_id, topic) in sorted(on_file.items()):
        entry = wanted.setdefault(episode_id, (topic, []))
        entry[1].append(turn_id)
        if entry[0] is None and topic is not None:
            wanted[episode_id] = (topic, entry[1])
    for episode_id, episode in list(graph.episodes.items()):
        file_topic, turns = wanted.get(episode_id, (None, []))
        if sorted(episode.turns) != turns or file_topic not in (None, episode.node):
            graph.remove(episode_id)
    missing = [e for e in wanted if e not in graph.episodes]
    memories = {m.id: m for m in load([t for e in missing for t in wanted[e][1]])}
    groups, group_ids = [], []
    for episode_id in missing:
        members = sorted((memories[t] for t in wanted[episode_id][1] if t in memories),
                         key=lambda m: (m.created_at, m.id))
        if members:
            groups.append(members)
            group_ids.append(episode_id)
    for episode in build(groups, embed, group_ids):
        graph.place(episode, wanted[episode.id][0])
    return {t: (e, graph.episodes[e].node) for e, (topic, turns) in wanted.items()
            if topic is None and e in graph.episodes for t in turns}
