"""TopicGraph on hand-made vectors: joins, running means, splits, edges, planning."""

from __future__ import annotations

import numpy as np

from memoryd.config import GraphConfig
from memoryd.graph.expand import match
from memoryd.graph.store import Episode, GraphStore
from memoryd.graph.topics import TopicGraph

DIM = 4


def _vec(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def _episode(i: int, vector: np.ndarray, scope: str = "global") -> Episode:
    return Episode(id=f"e{i}", scope=scope, turns=[f"t{i}"], label=f"episode {i}",
                   importance=0.5, vector=vector, created_at=float(i))


def test_join_at_threshold_and_running_mean_centroid():
    graph = TopicGraph(GraphConfig(join_threshold=0.7), DIM)
    a, created = graph.place(_episode(1, _vec(1, 0, 0, 0)))
    assert created
    b, created = graph.place(_episode(2, _vec(1, 0.5, 0, 0)))  # cos 0.89: joins
    assert (b, created) == (a, False)
    np.testing.assert_allclose(graph.nodes[a].centroid,
                               (_vec(1, 0, 0, 0) + _vec(1, 0.5, 0, 0)) / 2, rtol=1e-6)
    c, created = graph.place(_episode(3, _vec(0, 1, 0, 0)))  # cos 0.23 to the mean
    assert created and c != a
    other, created = graph.place(_episode(4, _vec(1, 0, 0, 0), scope="agent:x"))
    assert created and other != a  # nodes never cross scopes
    assert graph.nodes[a].label == "episode 1"


def test_split_hands_edges_on_and_a_plan_changes_nothing_until_adopted():
    graph = TopicGraph(GraphConfig(join_threshold=0.0, split_step=0.5, member_cap=2), DIM)
    node, _ = graph.place(_episode(1, _vec(1, 0, 0, 0)))
    graph.place(_episode(2, _vec(1, 0.1, 0, 0)))
    peer, _ = graph.place(_episode(3, _vec(0, 0, 0, 1), scope="agent:x"))
    graph.co_occur([node, peer])
    plan = graph.clone()
    plan.place(_episode(4, _vec(0, 1, 0, 0)))
    parts = plan.split(node)
    assert len(parts) == 2
    assert node in graph.nodes and len(graph.nodes[node].members) == 2  # untouched
    graph.co_occur([node, peer])  # retrieval goes on while the plan is made
    graph.adopt(plan)
    assert node not in graph.nodes and set(parts) <= set(graph.nodes)
    for part in parts:  # each part inherits the old node's edge, weight and all
        assert graph.edges[tuple(sorted((part, peer)))] == 2.0
    assert all(node not in pair for pair in graph.edges)
    assert sorted(len(graph.nodes[p].members) for p in parts) == [1, 2]


def test_match_expands_only_to_neighbours_that_clear_the_threshold(tmp_path):
    params = GraphConfig(join_threshold=0.95, edge_threshold=0.6, max_nodes=1)
    graph = TopicGraph(params, DIM)
    a, _ = graph.place(_episode(1, _vec(1, 0, 0, 0)))
    b, _ = graph.place(_episode(2, _vec(1, 0.8, 0, 0)))
    c, _ = graph.place(_episode(3, _vec(0, 0, 1, 0)))
    query = _vec(1, 0.2, 0, 0)
    found = match(graph, query, ["global"], now=10.0)
    assert [m.node for m in found.nodes] == [a]
    assert found.co_occurring == [a, b]  # both clear 0.6 (a 0.98, b 0.89)
    graph.co_occur(found.co_occurring)
    graph.co_occur([a, c])  # an edge to a node the query does not reach
    found = match(graph, query, ["global"], now=10.0)
    assert [(m.node, m.via) for m in found.nodes] == [(a, None), (b, a)]
    assert set(found.turns) == {"t1", "t2"}
    assert match(graph, query, ["agent:other"], now=10.0).nodes == []

    store = GraphStore(tmp_path / "graph.sqlite", "model-a")
    graph.save(store, now=10.0)
    loaded = TopicGraph(params, DIM)
    loaded.load(store)
    assert loaded.edges == graph.edges and set(loaded.nodes) == {a, b, c}
    np.testing.assert_allclose(loaded.nodes[b].centroid, graph.nodes[b].centroid)
    store.close()
    # Another model's vectors are dropped (rebuilt from the files); the edges stay.
    other = GraphStore(tmp_path / "graph.sqlite", "model-b")
    assert other.nodes() == [] and other.edges() == graph.edges
    other.close()
