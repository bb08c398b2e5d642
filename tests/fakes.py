"""Stand-ins for what a test does not test: the embedding model and chromadb.

`FakeEmbedder` gives texts that share words similar vectors (hashed bag of words),
deterministically and in microseconds; `MemoryVectors` is the VectorStore port over
dicts. `server/wiring.py` takes both, so the engine around them is the real one; the
type checker holds both to the ports (memoryd/ports.py) the engine is written against.
`never_ready_interpreter` is a vector process whose start never ends.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np

from memoryd import ports

_WORD = re.compile(r"\w+")


class FakeEmbedder:
    model_id = "fake-bag-of-words-64"
    dim = 64

    def __init__(self) -> None:
        self.calls = 0  # calls that reached the "model": some text was not cached
        self._cache: dict[str, np.ndarray] = {}  # by text, as the real one

    def describe(self) -> dict[str, Any]:
        return {"model": self.model_id, "file": None, "dim": self.dim, "sha256": None}

    def _word(self, word: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
        return np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)

    def embed(self, texts: list[str]) -> np.ndarray:
        if any(t not in self._cache for t in texts):
            self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            cached = self._cache.get(text)
            if cached is not None:
                out[i] = cached
                continue
            for word in _WORD.findall(text.casefold()):
                out[i] += self._word(word)
            norm = float(np.linalg.norm(out[i]))
            out[i] = out[i] / norm if norm else self._word("")
            self._cache[text] = out[i].copy()
        return out

    def prefetch(self, texts: list[str]) -> Future[None] | None:
        """As the real one, made at once (the real one queues them for its threads)."""
        if all(t in self._cache for t in texts):
            return None
        self.embed(texts)
        done: Future[None] = Future()
        done.set_result(None)
        return done

    def count_tokens(self, text: str, limit: int | None = None) -> int:
        return len(_WORD.findall(text))

    def cache_bytes(self) -> tuple[int, int]:
        return len(self._cache), sum(v.nbytes for v in self._cache.values())

    def close(self) -> None:
        pass  # nothing started


class MemoryVectors:
    """The VectorStore port (as retrieval/vectors.py keeps it) in memory."""

    def __init__(self) -> None:
        # (kind, scope) -> id -> (vector, text hash, model)
        self.data: dict[tuple[str, str], dict[str, tuple[np.ndarray, str, str]]] = {}
        self.set_aside: Path | None = None  # never unreadable
        self.ready = True  # nothing to open

    def warm(self) -> None:
        pass

    def close(self) -> None:
        pass

    def release(self, idle: float) -> bool:
        return False  # nothing held beyond what it stores

    @property
    def pid(self) -> int | None:
        return None

    def unused_for(self) -> float | None:
        return None

    def upsert(self, kind: str, scope: str, ids: list[str], vectors: np.ndarray,
               hashes: list[str], model: str) -> None:
        col = self.data.setdefault((kind, scope), {})
        for memory_id, vector, h in zip(ids, vectors, hashes, strict=True):
            col[memory_id] = (np.array(vector, dtype=np.float32), h, model)

    def delete(self, scope: str, ids: list[str], kinds: tuple[str, ...] = ("own", "ctx")
               ) -> None:
        for kind in kinds:
            col = self.data.get((kind, scope), {})
            for memory_id in ids:
                col.pop(memory_id, None)

    def collection_ids(self) -> list[str]:
        return sorted(f"{kind}-{scope}" for kind, scope in self.data)

    def scan(self, model: str) -> Iterator[tuple[str, str, list[str], np.ndarray, list[str]]]:
        for (kind, scope), col in self.data.items():
            ids = [i for i, (_, _, m) in col.items() if m == model]
            if ids:
                yield (kind, scope, ids, np.stack([col[i][0] for i in ids]),
                       [col[i][1] for i in ids])

    def migrate(self, model: str | None) -> int:
        return 0  # nothing older in memory


def never_ready_interpreter(folder: Path) -> tuple[Path, Path]:
    """A program to stand in for `sys.executable` when ApartVectors starts its child: a
    child that never says it is ready (chroma's start-up, for as long as a test needs).
    Returns the program and a FIFO from which the child's pid is read once it runs."""
    said = folder / "never-ready.pid"
    os.mkfifo(said)
    program = folder / "never-ready"
    program.write_text(f'#!/bin/sh\necho $$ > "{said}"\nexec sleep 600\n')
    program.chmod(0o700)
    return program, said


def _conforming() -> tuple[ports.Embedder, ports.VectorStore]:
    """Never called: the type checker (scripts/test) fails here when a fake and the
    port it stands in for part ways."""
    return FakeEmbedder(), MemoryVectors()
