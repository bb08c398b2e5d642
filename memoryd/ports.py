"""What the engine takes from outside it, as Protocols: the embedding model, the vector
store, the reranker and the chat model.

The engine is written against these, not against the classes that implement them
(models/embedder.py OnnxEmbedder, retrieval/vectors.py ChromaVectors and
retrieval/vectors_apart.py ApartVectors, models/reranker.py OnnxCrossEncoder,
llm/client.py ChatClient), so a test hands it stand-ins (tests/fakes.py) that the type
checker holds to the same members.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

    from memoryd.config import LlmConfig


class Embedder(Protocol):
    """Texts to unit vectors of `dim` floats; the same text, the same vector."""

    @property
    def model_id(self) -> str: ...  # which model made a vector (stored beside it)

    @property
    def dim(self) -> int: ...

    def describe(self) -> dict[str, Any]: ...  # for `status`: model, file, dim, sha256

    def embed(self, texts: list[str]) -> np.ndarray: ...  # (len(texts), dim) float32

    def prefetch(self, texts: list[str]) -> Future[None] | None:
        """Start embedding `texts` now; `embed` of them later finds them made. The
        work's future, None when there was nothing to do."""
        ...

    def count_tokens(self, text: str, limit: int | None = None) -> int: ...

    def cache_bytes(self) -> tuple[int, int]: ...  # texts in its vector cache, their bytes

    def close(self) -> None: ...  # ends what it started (a process, threads)


class VectorStore(Protocol):
    """Vectors by (kind, scope, id), each labelled with its text's hash and its model:
    derived, so a store that cannot be read is set aside and made anew."""

    @property
    def set_aside(self) -> Path | None: ...  # where an unreadable store was moved

    @property
    def ready(self) -> bool: ...  # open (or failed to): using it now does not wait

    def warm(self) -> None: ...  # begin opening, if nothing has

    def close(self) -> None: ...

    # Close what it holds in memory when unused for `idle` seconds (opened again at the
    # next use); whether it did. On the writer thread.
    def release(self, idle: float) -> bool: ...

    def unused_for(self) -> float | None: ...  # seconds since its last use; None: closed

    @property
    def pid(self) -> int | None: ...  # its process, where it has one of its own and it runs

    def upsert(self, kind: str, scope: str, ids: list[str], vectors: np.ndarray,
               hashes: list[str], model: str) -> None: ...

    def delete(self, scope: str, ids: list[str],
               kinds: tuple[str, ...] = ("own", "ctx")) -> None: ...

    def collection_ids(self) -> list[str]: ...  # changes when the store is replaced

    def scan(self, model: str
             ) -> Iterator[tuple[str, str, list[str], np.ndarray, list[str]]]: ...

    def migrate(self, model: str | None) -> int: ...  # an older layout's vectors moved


class Reranker(Protocol):
    """A relevance score for each (query, passage) pair, on the reranker's own scale."""

    def score(self, pairs: list[tuple[str, str]]) -> list[float]: ...


class ChatModel(Protocol):
    """An OpenAI-compatible chat model asked for JSON, with its counters for `status`."""

    @property
    def config(self) -> LlmConfig: ...

    @property
    def endpoint(self) -> str: ...  # the URL it posts to

    @property
    def calls(self) -> int: ...

    @property
    def failures(self) -> int: ...

    @property
    def last_error(self) -> dict[str, str] | None: ...  # {at, task, error}

    async def ask_task(self, task: str, schema: dict[str, Any], system: str, user: str,
                       max_tokens: int = 512) -> dict[str, Any]:
        """The JSON object the model answers for `task`; LlmError when it cannot."""
        ...
