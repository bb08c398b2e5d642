"""decay-sweep: cold conversation turns become long-term episodes in the topic graph.

Turns that went cold (graph.cold_below, graph.min_age) pair into episodes (a user
turn and its reply), each embedded once and clustered into a topic node (cosine >=
graph.join_threshold to a centroid, else a new node); a node grown past
graph.member_cap is split. Each turn's file records its `episode` and `topic`, so the
graph can always be rebuilt from the files. The plan is made on a copy of the graph:
a dry run reports it and changes nothing.
"""

from __future__ import annotations

from datetime import datetime

import structlog
import trio

from memoryd.graph import episodes
from memoryd.graph.store import Episode
from memoryd.graph.topics import TopicGraph
from memoryd.jobs.needs import JobEngine
from memoryd.jobs.report import Change

WRITE_BATCH = 200  # turn files rewritten per hold of the write lock
log = structlog.get_logger("memoryd.jobs")


async def run(engine: JobEngine, now: datetime, dry_run: bool) -> list[Change]:
    cfg = engine.config.graph
    live = engine.graph
    plan = await trio.to_thread.run_sync(live.clone)
    # First what the files say (hand edits, deleted turns), then the newly cold turns.
    assigned = await engine.sync.reconcile_graph(plan)
    turns = await engine.reads.unswept_turns()
    groups = [g for g in episodes.pair_turns(turns, cfg.pair_window)
              if all(episodes.is_cold(t, now, cfg.half_life, cfg.cold_below, cfg.min_age)
                     for t in g)]
    if groups:
        log.info("decay_sweep.cold", turns=sum(len(g) for g in groups), episodes=len(groups))
    fresh = await trio.to_thread.run_sync(episodes.build, groups, engine.embedder.embed)
    changes = await trio.to_thread.run_sync(_place, plan, fresh, cfg.member_cap)
    new = {e.id for e in fresh}
    for episode in plan.episodes.values():
        was = live.episodes.get(episode.id)
        if episode.id in new or (was is not None and was.node != episode.node):
            for turn in episode.turns:
                assigned[turn] = (episode.id, episode.node)
    known_nodes = set(live.nodes)
    paths = {m.id: engine.path_of(m) for m in await engine.reads.peek(list(assigned))}
    for turn_id, (episode_id, node) in assigned.items():
        was = live.episodes.get(episode_id)
        changes.append(Change(
            id=turn_id, action="episode" if episode_id in new else "topic",
            path=paths.get(turn_id),
            before={"episode": was.id if was else None, "topic": was.node if was else None},
            after={"episode": episode_id, "topic": node, "label": plan.nodes[node].label,
                   "new_topic": node not in known_nodes}))
    if not dry_run:
        items = list(assigned.items())
        for start in range(0, len(items), WRITE_BATCH):  # writers get a turn in between
            await engine.writes.assign_episodes(dict(items[start:start + WRITE_BATCH]))
            if len(items) > WRITE_BATCH:
                log.info("decay_sweep.progress", written=min(start + WRITE_BATCH, len(items)),
                         of=len(items))
        live.adopt(plan)
        await engine.save_graph(live, now.timestamp())
    return changes


def _place(plan: TopicGraph, fresh: list[Episode], member_cap: int) -> list[Change]:
    """Cluster the new episodes into the plan (a worker thread: a first sweep of a long
    history is thousands of centroid comparisons); splits are reported."""
    changes = []
    for episode in fresh:
        node, _ = plan.place(episode)
        members = len(plan.nodes[node].members)
        if members > member_cap and (parts := plan.split(node)):
            changes.append(Change(id=node, action="split", before={"members": members},
                                  after={"topics": parts}))
    return changes
