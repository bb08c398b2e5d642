"""The model process (models/apart.py): a write's texts embedded ahead of its commit by
a process of its own in the kernel's idle class, whose vectors are the daemon's bit for
bit, and which a commit never waits on for long. The real model, real processes."""

from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np
import pytest
from structlog.testing import capture_logs

from memoryd.models import batch_check
from memoryd.models.apart import STALLED, START_AFTER, ApartModel
from memoryd.models.embedder import LATE, ModelCall, OnnxEmbedder
from tests.e2e.test_lifecycle import wait_for

TEXTS = [f"note {i}: the kayak club meets at the heron pond on day {i * 7}" for i in range(40)]


@pytest.fixture(scope="module")
def reference() -> OnnxEmbedder:
    return OnnxEmbedder(variant="int8")


@pytest.fixture
def embedder():
    made = OnnxEmbedder(variant="int8", apart=True, workers=2)  # two calls side by side
    yield made
    made.close()


def _started(embedder: OnnxEmbedder) -> dict:
    """Write texts as a stream until the model process runs (until then the daemon's
    own threads make them)."""

    def running() -> bool:
        ahead = embedder.prefetch([f"a note to start the model process ({time.monotonic()})"])
        assert ahead is not None
        ahead.result(60)
        return embedder.describe()["apart"]["state"] == "on"

    wait_for(running, 60, "the model process")
    return embedder.describe()["apart"]


def test_a_prefetch_is_embedded_in_another_process_bit_for_bit(embedder, reference) -> None:
    apart = _started(embedder)
    assert apart["pid"] != os.getpid()
    if sys.platform == "linux":
        assert os.sched_getscheduler(apart["pid"]) == os.SCHED_IDLE
    ahead = embedder.prefetch(TEXTS)
    assert ahead is not None
    ahead.result(60)
    assert embedder.describe()["apart"]["calls"] > apart["calls"], "the process made them"
    got = embedder.embed(TEXTS)
    assert embedder.describe()["apart"]["late"] == 0
    assert np.array_equal(got, reference.embed(TEXTS)), "the daemon's vectors, exactly"


def _probe(reference: OnnxEmbedder) -> list[list[int]]:
    return [e.ids for e in reference.tokenizer.encode_batch(list(batch_check.PROBE))]


def _run(reference: OnnxEmbedder):
    """The daemon's own model calls (what the process is checked against)."""
    return lambda ids: reference.run_model(ModelCall([""] * len(ids), ids)).copy()


def test_a_lone_write_starts_no_process(embedder, reference) -> None:
    for n in range(START_AFTER - 1):
        ahead = embedder.prefetch([f"a lone note {n}"])
        assert ahead is not None
        ahead.result(60)
    assert embedder.describe()["apart"]["state"] == "off"
    assert np.array_equal(embedder.embed(["a lone note 3"]), reference.embed(["a lone note 3"]))


def test_a_model_process_whose_vectors_differ_is_refused(reference) -> None:
    probe = _probe(reference)
    run = _run(reference)

    def nudged(ids: list[list[int]]) -> np.ndarray:  # a daemon one float step apart
        got = run(ids)
        got[0, 0] = np.nextafter(got[0, 0], np.float32(2))
        return got

    model = ApartModel(reference.model_file, "int8", 1, nudged, batch_check.calls(probe, 16))
    with capture_logs() as logs:
        for _ in range(START_AFTER):  # a stream of calls starts it
            assert model.submit(probe[:1]) is None, "not started yet: the caller makes it"
        assert model.state == "starting"
        wait_for(lambda: model.state != "starting", 60, "the probe")
    assert model.state == "refused" and "differ" in model.why
    assert [e["event"] for e in logs if e["log_level"] != "info"] == ["embedder.apart_refused"]
    assert model.submit(probe[:1]) is None, "never used"
    assert model.describe()["pid"] is None, "and not left running"


@pytest.mark.skipif(sys.platform != "linux", reason="stops the child with SIGSTOP")
def test_a_commit_waits_for_a_starved_model_process_a_moment_only(embedder, reference) -> None:
    """A process in the idle class may get no core for a while: a commit that needs
    texts it has not made waits until it has answered nothing for STALLED (LATE at
    most), then makes them itself."""
    before = _started(embedder)
    pid = before["pid"]
    os.kill(pid, signal.SIGSTOP)  # as starved as it can be
    try:
        ahead = embedder.prefetch(TEXTS)
        assert ahead is not None
        wait_for(lambda: embedder.describe()["apart"]["calls"] > before["calls"], 60,
                 "the calls offered")
        got = embedder.embed(TEXTS)
        assert not ahead.done(), "the process has not made them"
        late = embedder.describe()["apart"]["late"]
        assert late == len(TEXTS), f"made here after {STALLED} s, {LATE} s at most"
        # and until it catches up, new texts go to the daemon's own threads
        more = embedder.prefetch(["a note written while it is starved"])
        assert more is not None
        more.result(60)
        assert embedder.describe()["apart"]["declined"] >= 1
    finally:
        os.kill(pid, signal.SIGCONT)
    ahead.result(60)  # its answers land later, and change nothing
    assert np.array_equal(got, reference.embed(TEXTS))
    assert np.array_equal(embedder.embed(TEXTS), got)


def test_a_model_process_that_dies_is_started_again(embedder, reference) -> None:
    first = _started(embedder)["pid"]
    with capture_logs() as logs:
        os.kill(first, signal.SIGKILL)
        wait_for(lambda: embedder.describe()["apart"]["state"] == "off", 60, "the loss seen")
    assert [e["event"] for e in logs] == ["embedder.apart_lost"]
    assert embedder.describe()["apart"]["lost"] == 1
    second = _started(embedder)["pid"]
    assert second != first
    ahead = embedder.prefetch(TEXTS[:8])
    assert ahead is not None
    ahead.result(60)
    assert np.array_equal(embedder.embed(TEXTS[:8]), reference.embed(TEXTS[:8]))


def test_a_quiet_model_process_ends(reference) -> None:
    probe = _probe(reference)
    run = _run(reference)
    model = ApartModel(reference.model_file, "int8", 1, run, batch_check.calls(probe, 16),
                       idle=1.0)
    call = batch_check.calls(probe, 16)[0]  # texts of one token count
    made: list = []

    def taken() -> bool:  # (offered as a stream until a child runs: one may end)
        for _ in range(START_AFTER):
            made[:] = [model.submit(call)]
            if made[0] is not None:
                return True
        return False

    try:
        with capture_logs() as logs:
            wait_for(taken, 60, "the model process")
            assert np.array_equal(made[0].result(60), run(call))
            wait_for(lambda: any(e["event"] == "embedder.apart_released" for e in logs),
                     60, "released")
        events = [e["event"] for e in logs]
        pid = next(e["pid"] for e in logs if e["event"] == "embedder.apart_started")
        assert events[-1] == "embedder.apart_released", events
        assert "embedder.apart_lost" not in events
        assert model.describe()["pid"] is None
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # ended and reaped
    finally:
        model.close()


def test_calls_made_side_by_side_are_answered_in_the_order_asked(reference) -> None:
    """Two workers in the child: a short call asked after a long one is made first,
    and still answered after it, each with its own vectors."""
    probe = _probe(reference)
    run = _run(reference)
    model = ApartModel(reference.model_file, "int8", 1, run, batch_check.calls(probe, 16),
                       workers=2)
    ids = [e.ids for e in reference.tokenizer.encode_batch(TEXTS)]
    calls = [ids[:16], ids[16:17], ids[17:33], ids[33:34], ids[34:40], ids[:1]] * 4
    try:
        first: list = []

        def taken() -> bool:
            first[:] = [model.submit(calls[0])]
            return first[0] is not None

        wait_for(taken, 60, "the model process")
        made = [first[0], *(model.submit(call) for call in calls[1:])]
        assert all(m is not None for m in made), "none declined: the queue is short"
        for call, answer in zip(calls, made, strict=True):
            assert np.array_equal(answer.result(60), run(call))
    finally:
        model.close()
