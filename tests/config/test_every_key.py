"""Every key of config.example.yaml is read by the code it configures: a key that is
documented and never read fails here (recall.token_budget once was).

EFFECTS is the table of each key and what a user sees change with it. A daemon runs in
this process (`serve`: the real socket, model, chromadb, git and a scripted LLM) with
its config sections replaced by recording copies, and goes through a day: writes,
conversation turns, facts, searches, recall, every job, an ingest, a reminder, a
connection that waits, a stop. Every key must have been read there by a module other
than the config's own (whose validation reads some of them). The keys that only the
command line reads (the log's level and format, the socket) are tested by their effect
on a daemon process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import trio
import yaml

from memoryd.config import Config, parse_config
from memoryd.schedule.table import JOBS, SCHEDULED
from memoryd.server.daemon import serve
from memoryd_client import Client
from tests.e2e.test_lifecycle import wait_for
from tests.llm_server import ScriptedLlm, completion
from tests.retrieval.test_rerank import build_cross_encoder

EXAMPLE = Path(__file__).resolve().parents[2] / "config.example.yaml"

EFFECTS: dict[str, str] = {
    "socket": "where the daemon listens",
    "timezone": "the zone of 'tomorrow at 9' and of crontab schedules",
    "storage.inbox_ttl": "when an unclassified memory expires",
    "storage.decay_threshold": "how old a never-read note is when decay trashes it",
    "storage.upgrade_threshold": "reads that move an inbox memory to organized",
    "jobs.enabled": "whether jobs run on their schedules",
    **{f"jobs.{job.config_key}": f"when {job.name} runs" for job in SCHEDULED},
    "dream.enabled": "whether idle time tidies memory",
    "dream.idle_after": "how long idle before dream's first level",
    "graph.half_life": "how fast a turn goes cold",
    "graph.cold_below": "the recency below which a turn is cold",
    "graph.min_age": "the youngest a turn can go cold",
    "graph.pair_window": "a user turn and its answer make one episode within it",
    "graph.join_threshold": "the cosine at which an episode joins a topic",
    "graph.member_cap": "the members a topic holds before it splits",
    "graph.split_step": "how much tighter a split topic clusters",
    "graph.edge_threshold": "topics a query brings together gain an edge above it",
    "graph.max_nodes": "the topics a smart search expands",
    "graph.members_per_node": "the episodes each expanded topic adds",
    "graph.expand": "whether smart search expands through topics",
    "llm.url": "whether and where the LLM is asked",
    "llm.model": "the model named in each request",
    "llm.api_key_env": "the variable whose key is sent",
    "llm.timeout": "how long a call may take",
    "llm.batch_size": "memories per classification request",
    "llm.concurrency": "calls in flight at once",
    "llm.retries": "how often a failed call is tried again",
    "llm.structured_output": "whether a JSON schema is sent",
    "notify.desktop": "whether a due reminder pops up on the desktop",
    "server.max_connections": "connections beyond it are refused busy",
    "server.drain_timeout": "how long busy connections may finish at a stop",
    "server.idle_timeout": "a silent connection is closed after it",
    "watcher.enabled": "whether hand edits are picked up live",
    "watcher.quiet_period": "how long a burst of edits settles before a re-index",
    "stats.flush_interval": "how often access counts reach the files",
    "embedder.variant": "the model's vectors (fp32 or int8)",
    "embedder.threads": "onnxruntime's threads for one call",
    "embedder.batch_size": "texts per model call in bulk",
    "embedder.workers": "model calls side by side in bulk",
    "embedder.apart": "whether a write's model calls run in a process of their own",
    "vectors.url": "an embedded chromadb or a server",
    "retrieval.top_k": "smart search's results",
    "retrieval.candidate_factor": "candidates per retriever",
    "retrieval.exact_limit": "exact dense scores up to it, the nearest cells above",
    "retrieval.score_threshold": "relevance below it is dropped",
    "retrieval.recency_weight": "how much newness counts",
    "retrieval.importance_weight": "how much importance counts",
    "retrieval.mmr_lambda": "relevance against variety",
    "retrieval.lexical_weight": "the keywords' share of the fused score",
    "retrieval.context_weight": "the context vector's share of the dense score",
    "retrieval.neighbour_field": "neighbouring turns' weight in the keyword field",
    "retrieval.neighbour_credit": "credit from a neighbouring turn",
    "retrieval.session_boost": "the boost of a session's turns",
    "retrieval.bm25_k1": "BM25's term saturation",
    "retrieval.bm25_b": "BM25's length normalisation",
    "retrieval.coverage_power": "how much covering more query words counts",
    "reranker.model_dir": "whether a cross-encoder reranks",
    "reranker.score_threshold": "the reranked relevance below which results drop",
    "recall.token_budget": "the <memory> block's size",
    "recall.top_k": "ranked memories in the block",
    "recall.tail": "the session's last turns under [RECENT]",
    "conversation.min_chars": "shorter turns are skipped",
    "conversation.duplicate_cosine": "a turn this close to a recent memory is skipped",
    "conversation.duplicate_window": "how many recent memories a turn is compared with",
    "conversation.ring": "turns kept in memory for [RECENT]",
    "conversation.max_entries": "turns a session keeps before the oldest go",
    "conversation.facts": "whether user turns teach facts",
    "conversation.summaries": "whether a session keeps a rolling summary",
    "compression.threshold": "sessions a scope holds before the oldest fold",
    "ingest.paths": "the folder each source reads by default",
    "git.enabled": "whether the root is kept under git",
    "git.commit_interval": "how often changes are committed",
    "git.remote": "where sync fetches from and pushes to",
    "git.branch": "the remote's branch sync uses",
    "git.sync_timeout": "how long a fetch or push may take",
    "git.sync_after": "how soon after committed writes a sync runs",
    "redaction.disabled": "which kinds of secret are stored as given, not redacted",
    "logging.level": "the least severe event logged",
    "logging.format": "how the log is written",
}
# Read on the command line, before any daemon exists: tested by effect below.
COMMAND_LINE = {"socket", "logging.level", "logging.format"}


def example_keys() -> set[str]:
    def leaves(d: dict[str, Any], prefix: str = "") -> set[str]:
        out: set[str] = set()
        for key, value in d.items():
            if isinstance(value, dict) and key != "paths":
                out |= leaves(value, f"{prefix}{key}.")
            else:
                out.add(prefix + key)
        return out

    return leaves(yaml.safe_load(EXAMPLE.read_text()))


def test_the_table_names_every_documented_key():
    assert set(EFFECTS) == example_keys()


def recording(config: Config, reads: dict[str, set[str]]) -> Config:
    """A copy of `config` whose every read of a key notes, in `reads`, the module that
    read it."""

    def recorder(cls: type, prefix: str) -> type:
        names = set(cls.__struct_fields__)

        class Recording(cls):  # type: ignore[misc, valid-type]
            def __getattribute__(self, name: str) -> Any:
                if name in names:
                    reads[prefix + name].add(sys._getframe(1).f_globals.get("__name__", "?"))
                return super().__getattribute__(name)

        return Recording

    def copy(value: Any, prefix: str) -> Any:
        fields = {f: getattr(value, f) for f in value.__struct_fields__}
        for name, inner in fields.items():
            if isinstance(inner, msgspec.Struct):
                fields[name] = copy(inner, f"{prefix}{name}.")
        return recorder(type(value), prefix)(**fields)

    return copy(config, "")


def bare_remote(tmp_path: Path) -> Path:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    return remote


async def test_a_day_of_the_daemon_reads_every_key(tmp_path):
    root = Path(tempfile.mkdtemp(prefix="md-")) / "root"
    (root / "categories" / "reminders").mkdir(parents=True)
    past = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    (root / "categories" / "reminders" / "due.md").write_text(
        f"---\nkind: reminder\ndue_at: {past}\n---\nWater the plants\n")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "boats.md").write_text("# Boats\n\nThe ferry to the island leaves at noon.\n")
    build_cross_encoder(tmp_path / "ce", "ferry")
    reads: dict[str, set[str]] = defaultdict(set)
    with ScriptedLlm(lambda body: completion("{}")) as llm:
        config = recording(parse_config({
            "llm": {"url": llm.url, "model": "tiny", "timeout": "5s", "retries": 0},
            "reranker": {"model_dir": str(tmp_path / "ce")},
            "ingest": {"paths": {"markdown": str(notes)}},
            # One topic that splits (over member_cap), met by a query: low thresholds.
            "graph": {"member_cap": 2, "join_threshold": 0.05, "edge_threshold": 0.05},
            "git": {"enabled": True, "remote": str(bare_remote(tmp_path))}}), reads)
        await run_daemon(root, config, a_day)
    # The next morning, without the cross-encoder: the fused relevance's threshold.
    await run_daemon(root, recording(parse_config({}), reads), lambda socket: Client(
        socket, retries=5).memory_smart_search("where does Ann live?"))
    unread = {key for key in set(EFFECTS) - COMMAND_LINE
              if not reads.get(key, set()) - {"memoryd.config"}}
    assert not unread, f"documented in config.example.yaml, never read: {sorted(unread)}"


async def run_daemon(root: Path, config: Config, work: Any) -> None:
    """`serve` in this process until `work(socket)` is done, then a SIGTERM (which
    serve's own signal receiver takes: the stop a user's `systemctl stop` makes)."""
    async with trio.open_nursery() as nursery:
        await nursery.start(serve, root, root / "memory.sock", config)
        await trio.to_thread.run_sync(work, root / "memory.sock")
        os.kill(os.getpid(), signal.SIGTERM)


def a_day(socket: Path) -> None:
    """What a user and their agents do, over the socket."""
    old = datetime(2024, 5, 1, 9, tzinfo=UTC)
    with Client(socket, retries=5) as c:
        c.memory_write("Deploys go through staging first")
        turns = [("user", "My sister Ann moved to Oslo last spring"),
                 ("assistant", "Oslo is lovely; does Ann like the fjords?"),
                 ("user", "Ann takes the morning ferry out to the islands"),
                 ("assistant", "The crossing takes about twenty minutes each way."),
                 ("user", "She watches the seagulls from the deck"),
                 ("assistant", "Gulls follow the boats for scraps of bread."),
                 ("user", "In winter the harbour sometimes freezes over"),
                 ("assistant", "Then the icebreaker clears a channel first.")]
        for i, (role, text) in enumerate(turns):  # long ago: cold for decay-sweep
            c.memory_remember(session="s1", role=role, content=text,
                              timestamp=(old + timedelta(minutes=i)).isoformat())
        c.memory_add("Ann works at the harbour office", session="s1")
        wait_for(lambda: c.call("stats")["backlog"] == 0, 120, "background learning")
        for job in JOBS:  # before any search reads the turns (a read warms a turn)
            c.call("jobs/run", {"job": job.name})
        c.memory_search("staging")
        c.memory_smart_search("Ann takes the ferry to the islands")  # through the topics
        c.memory_recall("what does Ann like?", session="s1")
        c.memory_ingest(source="markdown")
        c.memory_remind("Call Ann", when="tomorrow at 9")
        c.call("stats")


def test_the_command_line_keys_change_the_daemon(tmp_path):
    """`socket`, `logging.level` and `logging.format`, on a daemon process."""
    short = Path(tempfile.mkdtemp(prefix="md-"))
    root, socket = short / "root", short / "elsewhere.sock"
    root.mkdir()
    (root / "config.yaml").write_text(
        f"socket: {socket}\nlogging:\n  level: warning\n  format: console\n")
    log = short / "daemon.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "memoryd", "serve", "--root", str(root)],
                                stdout=out, stderr=out, env=dict(os.environ, HOME=str(short)))
    try:
        wait_for(socket.exists, 120, "the configured socket")
        with Client(socket, retries=5) as c:
            wait_for(lambda: c.call("health")["status"] == "ok", 120, "ready")
            c.memory_write("written through the configured socket")
        assert not (root / "memory.sock").exists()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    text = log.read_text()
    assert "daemon.ready" not in text, "an info event, below the configured level"
    lines = [line for line in text.splitlines() if line.strip()]
    for line in lines:  # console lines, not the JSON a non-terminal gets by default
        try:
            json.loads(line)
        except ValueError:
            continue
        raise AssertionError(f"a JSON log line with format: console: {line}")
