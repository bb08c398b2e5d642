"""Topics: a candidate reached through the topic graph says which topic node (and
episode) brought it in (graph/expand.py), for memory_explain."""

from __future__ import annotations

from memoryd.retrieval.candidates import Ranking


class Topics:
    name = "topics"

    def run(self, ranking: Ranking) -> None:
        topics = ranking.topics
        if topics is None:
            return
        nodes = {m.node: m for m in topics.nodes}
        for c in ranking.candidates:
            if c.id in topics.turns:
                node, sim = topics.turns[c.id]
                hit = nodes[node]
                c.graph = {"node": node, "label": hit.label, "node_sim": round(hit.sim, 4),
                           "episode_sim": round(sim, 4), "via": hit.via}
