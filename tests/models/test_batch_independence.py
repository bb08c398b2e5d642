"""A text's vector depends on its text alone: bit-identical embedded alone, in any batch,
in any order, by any path (embed, prefetch, worker threads), with the real model."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import onnx
import pytest

from memoryd.models import batch_check
from memoryd.models.assets import locate_assets
from memoryd.models.embedder import OnnxEmbedder, load_tokenizer, vectors
from memoryd.models.onnx import session, unmasked
from memoryd.retrieval.chunks import chunk

LONG_NOTE = "\n\n".join(
    f"## Section {n}\n\nThe deploy pipeline runs the {word} stage after the build; a failure "
    f"there pages the on-call engineer, who reads the runbook and rolls back within "
    f"{n * 5} minutes. Staging mirrors production's schema but not its data."
    for n, word in enumerate(["lint", "unit", "integration", "canary", "smoke", "load"], 1))
POOL = [
    "Anne prefers tea in the morning",
    "the Postgres migration is postponed",
    "a", "ok", "Yes!", "1 2 3 4 5 6 7 8 9 10 11 12",
    "Caroline (8 May 2023): I went to a LGBTQ support group yesterday.",
    "Melanie: I'm planning a camping trip with the kids next month, somewhere near a lake.",
    "我们家上个月搬到了上海，孩子们都很喜欢新学校。",
    "我最喜欢的水果是芒果，不过现在是草莓的季节。",
    "Der Zug nach Berlin fährt um 9 Uhr ab.",
    "ERROR 503 at 03:14:15 UTC; retry budget 0x7fff exhausted!!!",
    "def merge(a, b): return sorted(a + b)",
    "The user prefers dark mode, short answers, and no emoji in commit messages.",
    "I turned 35 yesterday and we celebrated with a small dinner at home.",
    "Deploys go through staging first; the canary takes 10% of traffic for 30 minutes.",
    "Remember that the API key rotation happens on the first Monday of every quarter.",
    "x " * 300,  # beyond the model's 256 tokens: clipped
] + [LONG_NOTE[start:end] for start, end in chunk(LONG_NOTE)]


@pytest.fixture(scope="module")
def alone() -> np.ndarray:
    """Each pool text embedded in a call of its own (no cache: nothing to share)."""
    embedder = OnnxEmbedder(variant="int8", cache_size=0)
    return np.concatenate([embedder.embed([text]) for text in POOL])


@pytest.mark.parametrize("variant", ["int8", "fp32"])
def test_a_vector_is_the_same_alone_and_in_any_batch(variant: str, alone: np.ndarray) -> None:
    draw = random.Random(58)
    for batch_size, workers in ((16, 1), (3, 1), (4, 2)):
        embedder = OnnxEmbedder(variant=variant, cache_size=0, batch_size=batch_size,
                                workers=workers)
        if batch_size == 16:  # each text in a call of its own (a model load is seconds)
            reference = alone if variant == "int8" else np.concatenate(
                [embedder.embed([t]) for t in POOL])
            assert len({len(ids) for ids in embedder.tokenize(POOL)}) > 5, \
                "texts of many token counts"
        for _ in range(3):
            picks = draw.choices(range(len(POOL)), k=draw.randint(2, 24))
            got = embedder.embed([POOL[i] for i in picks])
            assert np.array_equal(got, reference[picks]), (batch_size, workers, picks)


def test_a_prefetched_vector_is_the_one_embed_makes(alone: np.ndarray) -> None:
    embedder = OnnxEmbedder(variant="int8", batch_size=5)
    order = list(range(len(POOL)))
    random.Random(7).shuffle(order)
    done = embedder.prefetch([POOL[i] for i in order])
    assert done is not None
    done.result(timeout=60)
    assert np.array_equal(embedder.embed(POOL), alone)


def test_one_thread_or_two_make_the_same_vectors(alone: np.ndarray) -> None:
    two = OnnxEmbedder(variant="int8", threads=2, cache_size=0)
    assert np.array_equal(two.embed(POOL), alone)


def test_per_row_int8_is_near_fp32(alone: np.ndarray) -> None:
    """Per-row quantisation changes precision, not meaning: a scale misread by a kernel
    (one per row where one per column was expected) would be far off (cosine ~0.6)."""
    fp32 = OnnxEmbedder(variant="fp32").embed(POOL)
    cosine = (alone * fp32).sum(1)
    assert cosine.min() > 0.98 and cosine.mean() > 0.99, cosine


def test_the_check_proves_it_and_catches_a_per_tensor_model(tmp_path: Path) -> None:
    """The start-up check passes for the model we ship and fails for one quantized the
    way `quantize_dynamic` alone does it (one activation scale per call)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    embedder = OnnxEmbedder(variant="int8")
    assert embedder.describe()["batches"]["independent"] is True
    assert embedder.describe()["variant"] == "int8"
    per_tensor = tmp_path / "per-tensor.onnx"
    quantize_dynamic(str(locate_assets() / "onnx" / "model.onnx"), str(per_tensor),
                     per_channel=True, weight_type=QuantType.QInt8)
    model = session(unmasked(onnx.load(str(per_tensor))).SerializeToString())
    tokenizer = load_tokenizer(locate_assets() / "tokenizer.json", pad=False)
    probe = [e.ids for e in tokenizer.encode_batch(list(batch_check.PROBE))]
    verdict = batch_check.check(lambda ids: vectors(model, ids), probe)
    assert not verdict.independent
    assert "differed" in verdict.why


def test_a_batch_dependent_model_gets_one_text_per_call(monkeypatch: pytest.MonkeyPatch,
                                                         alone: np.ndarray) -> None:
    failed = batch_check.BatchVerdict(False, "the probe's vectors differed")
    monkeypatch.setattr(batch_check, "check", lambda run, probe: failed)
    embedder = OnnxEmbedder(variant="int8", batch_size=16, cache_size=0)
    assert embedder.describe()["batches"] == {"independent": False, "why": failed.why,
                                              "batch_size": 1}
    assert np.array_equal(embedder.embed(POOL), alone)
