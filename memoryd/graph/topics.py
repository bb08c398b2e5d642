"""TopicGraph: topic nodes over long-term episodes, and co-occurrence edges.

- An episode joins the node of its scope whose centroid is nearest, if the cosine is
  at least `join_threshold` (0.70); the centroid is the running mean of the members.
  Otherwise it founds a node labelled with its own text.
- A node above `member_cap` (20) members is re-clustered at join_threshold +
  `split_step`; if that gives two or more clusters, they replace it (each inherits
  its edges).
- Retrieval (graph/expand.py): nodes whose centroid scores at least `edge_threshold`
  (0.6) for a query are its topics; every pair of them gains a `co_occurs` edge
  (weight + 1), and a search expands from the best of them along edges to neighbours
  that also score at least the threshold.

All state sits in memory behind `lock`; the decay-sweep job plans on a `clone` and
`adopt`s it, so a dry run changes nothing and searches never see half a plan.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import msgspec
import numpy as np

from memoryd.config import GraphConfig
from memoryd.graph.store import Episode, GraphStore, Node
from memoryd.schema import new_id


class _ScopeMatrix:
    """The normalised centroids of one scope's nodes, one row each, updated in place."""

    def __init__(self, dim: int) -> None:
        self.ids: list[str | None] = []
        self.row: dict[str, int] = {}
        self.vectors = np.zeros((16, dim), dtype=np.float32)

    def put(self, node_id: str, centroid: np.ndarray) -> None:
        norm = float(np.linalg.norm(centroid))
        vector = centroid / norm if norm > 0 else centroid
        row = self.row.get(node_id)
        if row is None:
            row = len(self.ids)
            if row == len(self.vectors):
                self.vectors = np.concatenate([self.vectors, np.zeros_like(self.vectors)])
            self.ids.append(node_id)
            self.row[node_id] = row
        self.vectors[row] = vector

    def drop(self, node_id: str) -> None:
        row = self.row.pop(node_id, None)
        if row is not None:
            self.ids[row] = None
            self.vectors[row] = 0.0

    def scores(self, query: np.ndarray) -> tuple[np.ndarray, list[str | None]]:
        n = len(self.ids)
        return self.vectors[:n] @ query, self.ids


class TopicGraph:
    def __init__(self, params: GraphConfig, dim: int) -> None:
        self.params = params
        self.dim = dim
        self.lock = threading.RLock()
        self.nodes: dict[str, Node] = {}
        self.episodes: dict[str, Episode] = {}
        self.edges: dict[tuple[str, str], float] = {}
        self.adjacent: dict[str, set[str]] = defaultdict(set)
        self._scopes: dict[str, _ScopeMatrix] = {}
        self._seq = 0
        # What changed since the last save; and, in a clone, which nodes a split
        # replaced (old -> new), so `adopt` can hand the old node's edges on.
        self._changed_nodes: set[str] = set()
        self._dropped_nodes: set[str] = set()
        self._changed_episodes: set[str] = set()
        self._dropped_episodes: set[str] = set()
        self._dirty_edges: set[tuple[str, str]] = set()
        self._inherits: list[tuple[str, str]] = []

    # -- loading and saving ---------------------------------------------------------
    def load(self, store: GraphStore) -> None:
        with self.lock:
            nodes = {n.id: n for n in store.nodes()}
            for episode in store.episodes():
                node = nodes.get(episode.node)
                if node is None:
                    continue
                self._attach(node, episode)
                self.episodes[episode.id] = episode
                self._seq = max(self._seq, episode.seq)
            for node in nodes.values():
                if node.members:
                    self.nodes[node.id] = node
                    self._matrix(node.scope).put(node.id, node.centroid)
            for (a, b), weight in store.edges().items():
                if a in self.nodes and b in self.nodes:
                    self._set_edge(a, b, weight)

    def replace_text(self, text: str, replacement: str) -> None:
        """`text` out of every label held here (a purge; GraphStore.replace_text does
        the file's)."""
        with self.lock:
            for node in self.nodes.values():
                node.label = node.label.replace(text, replacement)
            for episode in self.episodes.values():
                episode.label = episode.label.replace(text, replacement)

    def save(self, store: GraphStore, now: float) -> int:
        """Write what changed since the last save; returns how many rows."""
        with self.lock:
            nodes = [self.nodes[i] for i in self._changed_nodes if i in self.nodes]
            episodes = [self.episodes[i] for i in self._changed_episodes if i in self.episodes]
            dropped_nodes, dropped_episodes = set(self._dropped_nodes), set(
                self._dropped_episodes)
            edges = {k: self.edges[k] for k in self._dirty_edges if k in self.edges}
            self._changed_nodes.clear()
            self._changed_episodes.clear()
            self._dropped_nodes.clear()
            self._dropped_episodes.clear()
            self._dirty_edges.clear()
        if nodes or episodes or dropped_nodes or dropped_episodes:
            store.save(nodes, dropped_nodes, episodes, dropped_episodes)
        if edges:
            store.save_edges(edges, now)
        return len(nodes) + len(episodes) + len(dropped_nodes) + len(dropped_episodes) + len(
            edges)

    def clone(self) -> TopicGraph:
        """A copy to plan on: nodes copied, episodes shared (replaced, never mutated)."""
        with self.lock:
            other = TopicGraph(self.params, self.dim)
            other.nodes = {i: Node(n.id, n.scope, n.label, n.created_at, list(n.members),
                                   n.total.copy() if n.total is not None else None)
                           for i, n in self.nodes.items()}
            other.episodes = dict(self.episodes)
            other._seq = self._seq
            for node in other.nodes.values():
                other._matrix(node.scope).put(node.id, node.centroid)
            return other

    def adopt(self, plan: TopicGraph) -> None:
        """Take a clone's nodes and episodes; edges stay live (bumped meanwhile), handed
        from split nodes to their parts and dropped with dropped nodes."""
        with self.lock:
            self.nodes, self.episodes, self._scopes = plan.nodes, plan.episodes, plan._scopes
            self._seq = plan._seq
            for old, new in plan._inherits:
                for peer in list(self.adjacent.get(old, ())):
                    weight = self.edges[_pair(old, peer)]
                    if peer in self.nodes and peer != new:
                        self._set_edge(new, peer, weight)
            for node_id in plan._dropped_nodes:
                self._drop_edges(node_id)
            self._changed_nodes |= plan._changed_nodes
            self._dropped_nodes |= plan._dropped_nodes
            self._changed_episodes |= plan._changed_episodes
            self._dropped_episodes |= plan._dropped_episodes

    # -- clustering -----------------------------------------------------------------
    def place(self, episode: Episode, topic: str | None = None) -> tuple[str, bool]:
        """Put an episode in a node: `topic` if given (rebuilding from the files), else
        the nearest node of its scope at join_threshold or a new one. (node, created)."""
        with self.lock:
            self._seq += 1
            episode.seq = self._seq
            created = False
            if topic is None:
                topic = self._nearest(episode.scope, episode.vector)
            if topic is None or topic not in self.nodes:
                topic = topic or new_id()
                self.nodes[topic] = Node(topic, episode.scope, episode.label,
                                         episode.created_at)
                created = True
            node = self.nodes[topic]
            episode.node = topic
            self._attach(node, episode)
            self.episodes[episode.id] = episode
            self._matrix(node.scope).put(node.id, node.centroid)
            self._changed_nodes.add(topic)
            self._changed_episodes.add(episode.id)
            return topic, created

    def _nearest(self, scope: str, vector: np.ndarray) -> str | None:
        matrix = self._scopes.get(scope)
        if matrix is None or not matrix.row:
            return None
        sims, ids = matrix.scores(vector)
        best = int(np.argmax(sims))
        if sims[best] >= self.params.join_threshold and ids[best] is not None:
            return ids[best]
        return None

    def split(self, node_id: str) -> list[str]:
        """Re-cluster an over-full node at join_threshold + split_step; the parts (two
        or more) replace it. Returns the new node ids, or [] when it stays whole."""
        with self.lock:
            node = self.nodes[node_id]
            threshold = self.params.join_threshold + self.params.split_step
            groups: list[tuple[np.ndarray, list[str]]] = []
            for episode_id in node.members:
                vector = self.episodes[episode_id].vector
                sims = [float(_unit(total) @ vector) for total, _ in groups]
                best = int(np.argmax(sims)) if sims else -1
                if best >= 0 and sims[best] >= threshold:
                    groups[best][1].append(episode_id)
                    groups[best] = (groups[best][0] + vector, groups[best][1])
                else:
                    groups.append((vector.copy(), [episode_id]))
            if len(groups) < 2:
                return []
            self._drop_node(node_id)
            made = []
            for _, members in groups:
                first = self.episodes[members[0]]
                part = Node(new_id(), node.scope, first.label, first.created_at)
                self.nodes[part.id] = part
                for episode_id in members:
                    episode = _moved(self.episodes[episode_id], part.id)
                    self.episodes[episode_id] = episode
                    self._attach(part, episode)
                    self._changed_episodes.add(episode_id)
                self._matrix(part.scope).put(part.id, part.centroid)
                self._changed_nodes.add(part.id)
                self._inherits.append((node_id, part.id))
                made.append(part.id)
            return made

    def remove(self, episode_id: str) -> None:
        """An episode whose turns are gone or moved: out of its node (an empty node goes)."""
        with self.lock:
            episode = self.episodes.pop(episode_id, None)
            if episode is None:
                return
            self._dropped_episodes.add(episode_id)
            self._changed_episodes.discard(episode_id)
            node = self.nodes.get(episode.node)
            if node is None:
                return
            node.members.remove(episode_id)
            if not node.members:
                self._drop_node(node.id)
                self._drop_edges(node.id)
                return
            assert node.total is not None
            node.total = node.total - episode.vector
            self._matrix(node.scope).put(node.id, node.centroid)
            self._changed_nodes.add(node.id)

    def _attach(self, node: Node, episode: Episode) -> None:
        node.members.append(episode.id)
        node.total = episode.vector.copy() if node.total is None else node.total + episode.vector

    def _drop_node(self, node_id: str) -> None:
        node = self.nodes.pop(node_id)
        self._matrix(node.scope).drop(node_id)
        self._dropped_nodes.add(node_id)
        self._changed_nodes.discard(node_id)

    def _matrix(self, scope: str) -> _ScopeMatrix:
        matrix = self._scopes.get(scope)
        if matrix is None:
            matrix = self._scopes[scope] = _ScopeMatrix(self.dim)
        return matrix

    # -- edges ------------------------------------------------------------------------
    def _set_edge(self, a: str, b: str, weight: float) -> None:
        key = _pair(a, b)
        self.edges[key] = weight
        self.adjacent[a].add(b)
        self.adjacent[b].add(a)
        self._dirty_edges.add(key)

    def _drop_edges(self, node_id: str) -> None:
        for peer in self.adjacent.pop(node_id, set()):
            self.edges.pop(_pair(node_id, peer), None)
            self.adjacent[peer].discard(node_id)

    def co_occur(self, node_ids: Iterable[str]) -> int:
        """Every pair of these nodes (all relevant to one query) gains weight 1."""
        ids = sorted(set(node_ids))
        with self.lock:
            ids = [i for i in ids if i in self.nodes]
            for i, a in enumerate(ids):
                for b in ids[i + 1:]:
                    self._set_edge(a, b, self.edges.get(_pair(a, b), 0.0) + 1.0)
        return len(ids) * (len(ids) - 1) // 2

    # -- retrieval --------------------------------------------------------------------
    def scores(self, query: np.ndarray, scopes: Iterable[str] | None,
               at_least: float) -> dict[str, float]:
        """node id -> centroid cosine to `query`, for the nodes of these scopes (all when
        None) that score at least `at_least`. Callers hold `lock`."""
        scored: dict[str, float] = {}
        for scope in scopes if scopes is not None else list(self._scopes):
            matrix = self._scopes.get(scope)
            if matrix is None or not matrix.row:
                continue
            sims, ids = matrix.scores(query)
            for row in np.flatnonzero(sims >= at_least).tolist():
                node_id = ids[row]
                if node_id is not None:
                    scored[node_id] = float(sims[row])
        return scored

    def weight(self, a: str, b: str) -> float:
        return self.edges.get(_pair(a, b), 0.0)

    def describe(self) -> dict[str, int]:
        with self.lock:
            return {"nodes": len(self.nodes), "episodes": len(self.episodes),
                    "edges": len(self.edges)}

    def view(self, can_see: Callable[[str], bool], limit: int) -> dict[str, Any]:
        """The graph as the web view draws it: the `limit` largest nodes of the scopes
        `can_see` lets through (their episode counts), and the co_occurs edges
        between them."""
        with self.lock:
            seen = sorted((n for n in self.nodes.values() if can_see(n.scope)),
                          key=lambda n: -len(n.members))
            nodes = [{"id": n.id, "label": n.label, "scope": n.scope,
                      "members": len(n.members)} for n in seen]
            shown = {n["id"] for n in nodes[:limit]}
            edges = [{"source": a, "target": b, "weight": round(w, 4)}
                     for (a, b), w in self.edges.items() if a in shown and b in shown]
        return {"nodes": nodes[:limit], "edges": edges, "truncated": len(nodes) > limit}


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def _moved(episode: Episode, node: str) -> Episode:
    return msgspec.structs.replace(episode, node=node)
