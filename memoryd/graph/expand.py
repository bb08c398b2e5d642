"""Graph expansion for retrieval: a query's topics, their neighbours along
co_occurs edges, and the episodes whose turns join smart search's candidates."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from memoryd.graph.topics import TopicGraph

MAX_CO_OCCURRING = 20  # a query's topics that gain edges: at most this many (190 pairs)
RECENCY_DAYS = 30


@dataclass
class NodeMatch:
    node: str
    label: str
    sim: float
    via: str | None = None  # None: matched the query itself; else reached along an edge


@dataclass
class GraphMatch:
    nodes: list[NodeMatch] = field(default_factory=list)
    turns: dict[str, tuple[str, float]] = field(default_factory=dict)  # -> node, ep. sim
    co_occurring: list[str] = field(default_factory=list)  # to join with co_occurs edges


def match(graph: TopicGraph, query: np.ndarray, scopes: Iterable[str] | None,
          now: float) -> GraphMatch:
    """The query's topics (centroid cosine >= edge_threshold), the best max_nodes of them
    expanded along edges to neighbours that clear the threshold too, and the turns of the
    best members_per_node episodes of each (0.5 sim + 0.3 recency + 0.2 importance)."""
    p = graph.params
    out = GraphMatch()
    with graph.lock:
        scored = graph.scores(query, scopes, p.edge_threshold)
        if not scored:
            return out
        ranked = sorted(scored, key=lambda i: -scored[i])
        out.co_occurring = ranked[:MAX_CO_OCCURRING]
        out.nodes = [NodeMatch(i, graph.nodes[i].label, scored[i]) for i in ranked[:p.max_nodes]]
        reached = {m.node for m in out.nodes}
        for hit in list(out.nodes):
            for peer in sorted(graph.adjacent.get(hit.node, ()),
                               key=lambda i: -graph.weight(hit.node, i)):
                sim = scored.get(peer)  # None: another scope, or below the threshold
                if peer not in reached and sim is not None:
                    reached.add(peer)
                    out.nodes.append(NodeMatch(peer, graph.nodes[peer].label, sim, hit.node))
        for m in out.nodes:
            members = [graph.episodes[e] for e in graph.nodes[m.node].members]
            sims = np.stack([e.vector for e in members]) @ query
            ranks = [0.5 * float(s) + 0.2 * e.importance + 0.3 * math.exp(
                -max(0.0, now - e.created_at) / 86400 / RECENCY_DAYS)
                for s, e in zip(sims, members, strict=True)]
            for i in np.argsort(ranks)[::-1][:p.members_per_node].tolist():
                for turn in members[i].turns:
                    out.turns[turn] = (m.node, float(sims[i]))
    return out
