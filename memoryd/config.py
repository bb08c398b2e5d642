"""`config.yaml` read into msgspec Structs; every key has a default.

Every key is documented in `config.example.yaml` (a test keeps the two in step).
A bad file or key fails at start with the key named (exit code 2).
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import msgspec
import yaml
from msgspec import Meta

from memoryd.durations import Duration
from memoryd.schedule.table import SCHEDULED
from memoryd.schedule.triggers import TriggerError, parse_trigger
from memoryd.secrets.rules import KINDS


class StorageConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    inbox_ttl: Duration = Duration(7 * 86400)
    decay_threshold: Duration = Duration(30 * 86400)
    upgrade_threshold: int = 3


# When each job runs: an interval (10m, 1h) or a crontab line ("17 3 * * *"); one key
# per scheduled job of the job table (schedule/table.py), with its default.
JobsConfig = msgspec.defstruct(
    "JobsConfig", [("enabled", bool, True),
                   *((job.config_key, str, job.default) for job in SCHEDULED)],
    forbid_unknown_fields=True, kw_only=True, module=__name__)


class GraphConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """decay-sweep and the topic graph."""

    half_life: Duration = Duration(7 * 86400)
    cold_below: float = 0.2
    min_age: Duration = Duration(300)
    pair_window: Duration = Duration(600)
    join_threshold: float = 0.70
    member_cap: int = 20
    split_step: float = 0.05
    edge_threshold: float = 0.6
    max_nodes: int = 6
    members_per_node: int = 2
    expand: bool = True


class DreamConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    enabled: bool = True
    idle_after: Duration = Duration(600)


class NotifyConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    desktop: bool = True


class ServerConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    max_connections: int = 256
    drain_timeout: Duration = Duration(10)
    # A connection silent this long is closed (0: never); subscribed ones never are.
    idle_timeout: Duration = Duration(300)


class WatcherConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    enabled: bool = True
    quiet_period: Duration = Duration(0.3)


class StatsConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    flush_interval: Duration = Duration(60)


class EmbedderConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    # auto: what the store's vectors were made with (index/embedder); int8 for a new
    # store and for `memoryd reindex` (memoryd/models/variant.py).
    variant: Literal["auto", "fp32", "int8"] = "auto"
    threads: int = 1
    # Texts per model call. Small batches are faster per text on a laptop's caches (the
    # int8 MiniLM, 35-token notes: 2.9 ms at 16, 3.0 at 32, 3.4 at 128) and share the
    # work out more evenly among the workers.
    batch_size: int = 16
    # Model calls at once when many texts are embedded together (bulk writes, imports,
    # re-index); a single write or a search makes one call.
    workers: int = 2
    # A write's texts embedded ahead of its commit by a process of its own that runs
    # only on a core nothing else wants (models/apart.py).
    apart: bool = True


class VectorsConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    url: str | None = None


class RetrievalConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    top_k: int = 5
    candidate_factor: int = 4
    exact_limit: int = 20000
    score_threshold: float = 0.1
    recency_weight: float = 0.2
    importance_weight: float = 0.1
    mmr_lambda: float = 0.7
    lexical_weight: float = 0.3
    context_weight: float = 0.3
    neighbour_field: float = 0.7
    neighbour_credit: float = 0.15
    session_boost: float = 0.3
    bm25_k1: float = 0.6
    bm25_b: float = 0.1
    coverage_power: float = 1.5


class RerankerConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    model_dir: str | None = None
    score_threshold: float = 0.35


class RecallConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    token_budget: int = 2000
    top_k: int = 10
    tail: int = 5  # the session's last turns, verbatim under [RECENT] (0: none)


class ConversationConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """memory_remember and memory_add: the gate, the ring of recent turns, facts."""

    min_chars: int = 8  # shorter turns are skipped by the relevance gate
    duplicate_cosine: float = 0.92  # a turn this close to a recent memory is a duplicate
    duplicate_window: int = 2000  # the scope's most recent memories compared with
    ring: int = 20  # turns of each session kept in memory (L0)
    max_entries: int = 500  # turns a session keeps; older ones go to the trash
    facts: bool = True  # learn facts from user turns
    summaries: bool = True  # keep each session's rolling summary


class CompressionConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    threshold: int = 50  # uncompressed sessions a scope holds before the oldest half fold


class LlmConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    url: str | None = None
    model: str = ""
    api_key_env: str | None = "OPENAI_API_KEY"
    timeout: Duration = Duration(30)
    batch_size: int = 20
    concurrency: int = 2  # calls in flight at once
    retries: int = 2  # after a timeout, a refused connection, HTTP 429 or 5xx
    # response_format json_schema (strict); false for endpoints without it: the answer
    # is then parsed out of fences or prose.
    structured_output: bool = True


class IngestConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    # The folder each source reads when `memory_ingest` names no path (and for `all`),
    # e.g. {obsidian: ~/vault}; sources without one use their default folder.
    paths: dict[str, str] = msgspec.field(default_factory=dict)


# A remote is never read as an option (a leading `-`); a branch is a plain ref name.
_REMOTE = r"^[^-\s]\S*$"
# A git branch name memoryd pushes to: no `..`, no leading dash (history/remote.py
# holds a branch a remote names to it too).
BRANCH = r"^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$"


class GitConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    enabled: bool | None = None  # None: on when a `git` binary is found
    commit_interval: Duration = Duration(10)  # at most one commit per this long
    # Sync (docs/sync.md): a remote git takes (SSH, HTTPS, a path), the branch there
    # (None: the one the remote's HEAD names), and how long a fetch or push may take.
    # No remote: no sync.
    remote: Annotated[str, Meta(pattern=_REMOTE, max_length=2048)] | None = None
    branch: Annotated[str, Meta(pattern=BRANCH)] | None = None
    sync_timeout: Duration = Duration(120)
    sync_after: Duration = Duration(30)  # after the history commits writes; 0: only the job


class RedactionConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Secrets cut out of every text before it is written (memoryd/secrets/)."""

    disabled: list[str] = []  # rules (secrets/rules.py KINDS) left off: stored as given


class LoggingConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    level: Literal["debug", "info", "warning", "error"] = "info"
    format: Literal["auto", "json", "console", "journal"] = "auto"


class Config(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    socket: str | None = None
    timezone: str | None = None
    storage: StorageConfig = msgspec.field(default_factory=StorageConfig)
    server: ServerConfig = msgspec.field(default_factory=ServerConfig)
    watcher: WatcherConfig = msgspec.field(default_factory=WatcherConfig)
    stats: StatsConfig = msgspec.field(default_factory=StatsConfig)
    embedder: EmbedderConfig = msgspec.field(default_factory=EmbedderConfig)
    vectors: VectorsConfig = msgspec.field(default_factory=VectorsConfig)
    retrieval: RetrievalConfig = msgspec.field(default_factory=RetrievalConfig)
    reranker: RerankerConfig = msgspec.field(default_factory=RerankerConfig)
    recall: RecallConfig = msgspec.field(default_factory=RecallConfig)
    conversation: ConversationConfig = msgspec.field(default_factory=ConversationConfig)
    compression: CompressionConfig = msgspec.field(default_factory=CompressionConfig)
    # JobsConfig is made from the job table at import (msgspec.defstruct): a type
    # checker cannot see its fields.
    jobs: JobsConfig = msgspec.field(default_factory=JobsConfig)  # type: ignore[valid-type]
    notify: NotifyConfig = msgspec.field(default_factory=NotifyConfig)
    dream: DreamConfig = msgspec.field(default_factory=DreamConfig)
    graph: GraphConfig = msgspec.field(default_factory=GraphConfig)
    llm: LlmConfig = msgspec.field(default_factory=LlmConfig)
    ingest: IngestConfig = msgspec.field(default_factory=IngestConfig)
    git: GitConfig = msgspec.field(default_factory=GitConfig)
    redaction: RedactionConfig = msgspec.field(default_factory=RedactionConfig)
    logging: LoggingConfig = msgspec.field(default_factory=LoggingConfig)


class ConfigError(Exception):
    """The config file is unreadable or a key is wrong; the message names the key."""


def _dec_hook(type_: type, obj: Any) -> Any:
    if type_ is Duration:
        return Duration.parse(obj)
    raise TypeError(f"unsupported config type {type_}")  # only Duration is custom


def _key_path(message: str) -> str:
    return message.replace("`$.", "`").replace("`$`", "the top level")


def parse_config(data: Any, source: str = "config.yaml") -> Config:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of keys at the top level")
    try:
        config = msgspec.convert(data, Config, dec_hook=_dec_hook)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{source}: {_key_path(str(exc))}") from None
    checks = [
        (set(config.redaction.disabled) <= set(KINDS),
         f"redaction.disabled: the rules are {', '.join(KINDS)}"),
        (config.server.max_connections >= 1, "server.max_connections must be at least 1"),
        (config.embedder.threads >= 1, "embedder.threads must be at least 1"),
        (config.embedder.batch_size >= 1, "embedder.batch_size must be at least 1"),
        (1 <= config.retrieval.top_k <= 100, "retrieval.top_k must be 1 to 100"),
        (config.retrieval.candidate_factor >= 1, "retrieval.candidate_factor must be >= 1"),
        (config.retrieval.recency_weight + config.retrieval.importance_weight <= 1,
         "retrieval.recency_weight + retrieval.importance_weight must be at most 1"),
        (0 <= config.retrieval.mmr_lambda <= 1, "retrieval.mmr_lambda must be 0 to 1"),
        (16 <= config.recall.token_budget <= 200_000,
         "recall.token_budget must be 16 to 200000"),
        (config.storage.upgrade_threshold >= 1, "storage.upgrade_threshold must be >= 1"),
        (config.graph.half_life > 0, "graph.half_life must be more than 0"),
        (0 <= config.graph.join_threshold <= 1, "graph.join_threshold must be 0 to 1"),
        (0 <= config.graph.edge_threshold <= 1, "graph.edge_threshold must be 0 to 1"),
        (config.graph.member_cap >= 2, "graph.member_cap must be at least 2"),
        (config.graph.max_nodes >= 1, "graph.max_nodes must be at least 1"),
        (config.graph.members_per_node >= 1, "graph.members_per_node must be at least 1"),
        (config.llm.batch_size >= 1, "llm.batch_size must be at least 1"),
        (config.llm.concurrency >= 1, "llm.concurrency must be at least 1"),
        (0 <= config.llm.retries <= 10, "llm.retries must be 0 to 10"),
        (config.recall.tail >= 0, "recall.tail must be 0 or more"),
        (0 < config.conversation.duplicate_cosine <= 1,
         "conversation.duplicate_cosine must be more than 0 and at most 1"),
        (config.conversation.ring >= 1, "conversation.ring must be at least 1"),
        (config.conversation.max_entries >= 1, "conversation.max_entries must be at least 1"),
        (config.compression.threshold >= 2, "compression.threshold must be at least 2"),
        (not config.llm.url or config.llm.url.startswith(("http://", "https://")),
         "llm.url must start with http:// or https://"),
        (not config.llm.url or bool(config.llm.model), "llm.model is needed with llm.url"),
    ]
    for ok, message in checks:
        if not ok:
            raise ConfigError(f"{source}: {message}")
    if config.timezone is not None:
        try:
            zone(config.timezone)
        except ValueError as exc:
            raise ConfigError(f"{source}: {exc} - at `timezone`") from None
    for job in SCHEDULED:
        try:
            parse_trigger(getattr(config.jobs, job.config_key), config.timezone)
        except TriggerError as exc:
            raise ConfigError(f"{source}: {exc} - at `jobs.{job.config_key}`") from None
    return config


def zone(name: str | None) -> tzinfo:
    """The configured time zone (IANA name), or the machine's local zone."""
    if name is None:
        return datetime.now().astimezone().tzinfo or UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r} (use an IANA name like "
                         f"Europe/Berlin or Asia/Shanghai)") from None


def load_config(path: Path | None) -> Config:
    """Read `path`; a missing default file means all defaults."""
    if path is None or not path.exists():
        return Config()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    return parse_config(data, str(path))
