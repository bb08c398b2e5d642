"""Two calls that need the same text: the model embeds it once, the second call waits
for it (a write's batch and the embedding started ahead of it). Prefetches queue their
model calls at once and never block their caller. The real model."""

from __future__ import annotations

import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from structlog.testing import capture_logs

from memoryd.models.embedder import OnnxEmbedder
from memoryd.priority import BACKGROUND_NICE


@pytest.fixture(scope="module")
def reference() -> OnnxEmbedder:
    return OnnxEmbedder()


def _gated(embedder: OnnxEmbedder, fail_first: bool = False):
    """Make the model wait for `release`; record what it was asked to embed."""
    real = embedder.run_model
    runs: list[list[str]] = []
    release = threading.Event()
    lock = threading.Lock()

    def run(call) -> np.ndarray:
        with lock:
            runs.append(list(call.texts))
            first = len(runs) == 1
        assert release.wait(30)
        if fail_first and first:
            raise RuntimeError("the model failed")
        return real(call)

    embedder.run_model = run  # type: ignore[method-assign]  # the model held
    return runs, release


def _until(condition) -> None:
    for _ in range(3000):
        if condition():
            return
        threading.Event().wait(0.01)
    raise AssertionError("timed out")


@pytest.mark.parametrize("fail_first", [False, True])
def test_a_text_being_embedded_is_waited_for_not_embedded_twice(reference, fail_first) -> None:
    embedder = OnnxEmbedder()
    runs, release = _gated(embedder, fail_first)
    with ThreadPoolExecutor(2) as pool:
        # 2 tokens each: one model call
        first = pool.submit(embedder.embed, ["the heron", "the tea"])
        _until(lambda: len(runs) == 1)
        second = pool.submit(embedder.embed, ["the tea", "a kayak"])
        _until(lambda: len(runs) == 2)  # its own text started: it waits for the other
        release.set()
        if fail_first:
            with pytest.raises(RuntimeError):
                first.result(30)
        else:
            first.result(30)
        got = second.result(30)
    # the shared text once, unless the call embedding it failed: then the waiter made it
    assert [sorted(run) for run in runs] == [["the heron", "the tea"], ["a kayak"]] + (
        [["the tea"]] if fail_first else [])
    want = reference.embed(["the tea", "a kayak"])
    assert np.allclose(got, want, atol=1e-4)
    assert embedder.in_flight() == 0, "nothing is left marked as being embedded"


def test_a_prefetch_returns_at_once_and_its_texts_are_not_embedded_again(reference) -> None:
    embedder = OnnxEmbedder(workers=2, batch_size=2)
    runs, release = _gated(embedder)
    first = embedder.prefetch(["the heron", "the tea"])  # 2 tokens each: one model call
    second = embedder.prefetch(["the tea", "a kayak", "the kayak club"])
    assert first is not None and second is not None
    # the second's model calls are queued at once: one starts before the first ends
    _until(lambda: len(runs) == 2)
    assert embedder.prefetch(["the heron", "a kayak"]) is None, "made already or queued"
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(embedder.embed, ["a kayak", "the heron"])
        release.set()
        got = waiting.result(30)
    first.result(30)
    second.result(30)
    assert sorted(t for run in runs for t in run) == sorted(
        ["the heron", "the tea", "a kayak", "the kayak club"]), "each text made once"
    assert np.allclose(got, reference.embed(["a kayak", "the heron"]), atol=1e-4)
    assert embedder.in_flight() == 0


def test_a_failed_prefetch_is_logged_and_its_texts_are_made_when_needed(reference) -> None:
    embedder = OnnxEmbedder()
    runs, release = _gated(embedder, fail_first=True)
    release.set()
    with capture_logs() as logs:
        ahead = embedder.prefetch(["the heron"])
        assert ahead is not None
        ahead.result(30)
    assert [e["event"] for e in logs] == ["embedder.prefetch_failed"]
    assert embedder.in_flight() == 0
    got = embedder.embed(["the heron"])
    assert runs == [["the heron"], ["the heron"]]
    assert np.allclose(got, reference.embed(["the heron"]), atol=1e-4)


def test_a_model_call_holds_texts_of_one_token_count(reference) -> None:
    """The model reads no attention mask, so nothing in a call may be padded: texts
    share a call only when they have as many tokens, whatever their characters say
    (digits are many tokens, a long word is few)."""
    texts = ["1 2 3 4 5 6 7 8 9", "a kayak", "antidisestablishmentarianism",
             "9 8 7 6 5 4 3 2 1 0", "the heron", "internationalization", "the kayak",
             "the heron's nest", "a heron"]
    tokens = {t: reference.count_tokens(t) for t in texts}
    for way in ("embed", "prefetch"):
        embedder = OnnxEmbedder(batch_size=2)
        runs, release = _gated(embedder)
        release.set()
        if way == "embed":
            got = embedder.embed(texts)
        else:
            ahead = embedder.prefetch(texts)
            assert ahead is not None
            ahead.result(30)
            assert embedder.in_flight() == 0
            got = embedder.embed(texts)
        assert sorted(t for run in runs for t in run) == sorted(texts), way
        assert all(len(run) <= 2 and len({tokens[t] for t in run}) == 1 for run in runs), way
        # as few calls as that allows: three texts of 2 tokens take two
        assert len(runs) == len(set(tokens.values())) + 1, (way, tokens)
        assert np.allclose(got, reference.embed(texts), atol=1e-4), way


@pytest.mark.skipif(sys.platform != "linux", reason="a thread's own niceness is Linux's")
def test_embedding_ahead_of_a_write_yields_the_cores_to_a_callers_model_call() -> None:
    """A prefetch's model calls (a write's texts, embedded ahead of its commit) run at
    BACKGROUND_NICE; a caller's own (a search's question) at the caller's priority."""
    embedder = OnnxEmbedder()
    real = embedder.run_model
    seen: dict[str, int] = {}

    def run(call) -> np.ndarray:
        tid = threading.get_native_id()
        seen[call.texts[0]] = os.getpriority(os.PRIO_PROCESS, tid)
        return real(call)

    embedder.run_model = run  # type: ignore[method-assign]  # the model watched
    own = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    queued = embedder.prefetch(["a note written ahead"])
    assert queued is not None
    queued.result(30)
    embedder.embed(["a question asked now"])
    assert seen == {"a note written ahead": max(own, BACKGROUND_NICE),
                    "a question asked now": own}
