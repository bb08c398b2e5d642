"""Wiring: build the engine's collaborators from the config, and the dispatcher over
the tools and server methods, in one place.

Tests substitute what they do not test: `embedder` (a fake embedder instead of
the model) and `vectors` (an in-memory vector store instead of chromadb).
"""

from __future__ import annotations

from pathlib import Path

import structlog

from memoryd.access_counts import AccessCounts
from memoryd.config import Config
from memoryd.engine import Engine
from memoryd.engine.conversation import Conversation
from memoryd.engine.facts import Facts
from memoryd.engine.history import History
from memoryd.engine.ingest import Ingest
from memoryd.engine.learning import Learning
from memoryd.engine.links import Links
from memoryd.engine.purge import Purge
from memoryd.engine.ranking import SearchPolicy
from memoryd.engine.reads import Reads
from memoryd.engine.recall import Recall
from memoryd.engine.remote import RemoteSync
from memoryd.engine.stores import Stores
from memoryd.engine.sync import FileSync
from memoryd.engine.transfer import Transfer
from memoryd.engine.upkeep import SessionUpkeep
from memoryd.engine.workers import SCORERS, Workers
from memoryd.engine.writes import Writes
from memoryd.events import EventBus
from memoryd.graph.store import GraphStore
from memoryd.graph.topics import TopicGraph
from memoryd.history.git import GitHistory
from memoryd.history.git import available as git_available
from memoryd.history.remote import DEFAULT_BRANCH
from memoryd.ports import ChatModel, Embedder, Reranker, VectorStore
from memoryd.protocol.dispatch import Dispatcher
from memoryd.retrieval.hybrid import HybridIndex
from memoryd.retrieval.pipeline import SmartSearch
from memoryd.retrieval.scoring import Recipe
from memoryd.retrieval.snapshots import Snapshots
from memoryd.secrets.redact import Redactor
from memoryd.server.app import App
from memoryd.server.methods import server_methods
from memoryd.store.catalog import Catalog
from memoryd.store.files import MarkdownStore
from memoryd.tools import registry

log = structlog.get_logger(__name__)


def _embedder(root: Path, config: Config, reindex: bool) -> Embedder:
    from memoryd.models import variant
    from memoryd.models.assets import user_cache_dir
    from memoryd.models.embedder import OnnxEmbedder

    e = variant.forced(config.embedder)
    if e != config.embedder:
        log.info("embedder.forced", variant=e.variant, threads=e.threads)
    index = root / "index"
    chosen = variant.choose(index, e.variant, rebuild=reindex)
    embedder = OnnxEmbedder(threads=e.threads, batch_size=e.batch_size, variant=chosen,
                            cache_dirs=[user_cache_dir(), index / "models"], workers=e.workers,
                            apart=e.apart)
    variant.record(index, chosen)
    return embedder


def _vectors(root: Path, config: Config) -> VectorStore:
    """An embedded store in a process of its own (its calls hold the GIL, and what it
    holds goes back to the system when it ends); a server's client in this one."""
    from memoryd.retrieval.vectors import ChromaVectors
    from memoryd.retrieval.vectors_apart import ApartVectors

    if config.vectors.url:
        return ChromaVectors(root / "index" / "chroma", config.vectors.url)
    return ApartVectors(root / "index" / "chroma")


def _reranker(config: Config) -> Reranker | None:
    if not config.reranker.model_dir:
        return None
    from memoryd.models.reranker import OnnxCrossEncoder

    return OnnxCrossEncoder(Path(config.reranker.model_dir).expanduser(),
                            threads=config.embedder.threads)


def _recipe(config: Config) -> Recipe:
    r = config.retrieval
    return Recipe(k1=r.bm25_k1, b=r.bm25_b, neighbour_field=r.neighbour_field,
                  coverage_power=r.coverage_power, lexical_weight=r.lexical_weight,
                  context_weight=r.context_weight, neighbour_credit=r.neighbour_credit,
                  session_boost=r.session_boost)


def build_engine(root: Path, config: Config, *, embedder: Embedder | None = None,
                 vectors: VectorStore | None = None, reindex: bool = False) -> Engine:
    """The engine for `root`: opens (or creates) every store under it. `reindex`: for
    `memoryd reindex`, which re-embeds everything (with the default embedder, unless
    the config names one)."""
    embedder = embedder if embedder is not None else _embedder(root, config, reindex)
    vectors = vectors if vectors is not None else _vectors(root, config)
    stores = Stores(files=MarkdownStore(root),
                    catalog=Catalog(root / "index" / "keyword.sqlite"),
                    hybrid=HybridIndex(embedder, vectors), access_counts=AccessCounts(),
                    events=EventBus(), workers=Workers(),
                    redactor=Redactor(config.redaction.disabled))
    graph = TopicGraph(config.graph, embedder.dim)
    graph_store = GraphStore(root / "index" / "graph.sqlite", embedder.model_id)
    graph.load(graph_store)
    reranker = _reranker(config)
    searcher = SmartSearch(stores.hybrid, _recipe(config),
                           exact_limit=config.retrieval.exact_limit,
                           candidate_factor=config.retrieval.candidate_factor,
                           reranker=reranker, fetch=lambda ids: stores.catalog.reader.get_many(ids),
                           graph=graph if config.graph.expand else None, readers=SCORERS)
    llm: ChatModel | None = None
    if config.llm.url:
        from memoryd.llm.client import ChatClient

        llm = ChatClient(config.llm)
    writes = Writes(stores, config)
    reads = Reads(stores.files, stores.catalog, stores.hybrid, searcher, graph,
                  stores.access_counts, stores.workers)
    facts = Facts(stores, config, llm)
    links = Links(stores)
    git = None
    if config.git.enabled or (config.git.enabled is None and git_available()):
        git = GitHistory(root, float(config.git.commit_interval))
        stores.on_change.append(git.changed)
    upkeep = SessionUpkeep(stores, config, reads, llm)
    learning = Learning(stores, config, reads, writes, facts, upkeep, llm)
    conversation = Conversation(stores, config, reads, writes, learning)
    ranking = SearchPolicy(reads, config, reranked=reranker is not None)
    snapshots = Snapshots(stores.hybrid, stores.catalog.writer, root / "index")
    sync = FileSync(stores, config, graph, graph_store, snapshots)
    remote = RemoteSync(root, config.git, git, stores, sync) if git is not None else None
    purge = Purge(root, stores, sync, graph, graph_store, git, config.git.remote,
                  lambda: (remote.branch if remote is not None else None) or DEFAULT_BRANCH)
    return Engine(
        root=root, config=config, stores=stores, writes=writes, links=links,
        sync=sync,
        reads=reads, embedder=embedder,
        graph=graph, graph_store=graph_store, facts=facts, conversation=conversation,
        learning=learning, upkeep=upkeep,
        ingest=Ingest(stores, writes, links, conversation, config),
        transfer=Transfer(stores),
        ranking=ranking,
        recall=Recall(reads, ranking, conversation, embedder.count_tokens, config.recall),
        history=History(stores, writes, git),
        purge=purge, reranker=reranker, llm=llm, git=git, remote=remote)


def build_dispatcher(app: App) -> Dispatcher:
    """The dispatcher over every tool and server method of `app`."""
    tools = registry.bind(app.engine)
    return Dispatcher(tools, server_methods(app, tools), app.saw_requests, app.gate)
