"""int8 codes scored on onnxruntime's integer product: the scores of the float query,
whatever the number of rows or queries, from many threads at once; exact on a kernel
that saturates pairs of products in 16 bits (x86 without VNNI); and where a kernel is
not exact, the probe finds it and numpy's float product scores instead."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnx
import pytest
from structlog.testing import capture_logs

from memoryd.retrieval import int8dot


def exact(codes: np.ndarray, query: np.ndarray) -> np.ndarray:
    return codes.astype(np.float64) @ query.astype(np.float64)


def pairwise_kernel(lane: int) -> int8dot.Kernel:
    """MatMulInteger's arithmetic on x86 without VNNI (vpmaddubsw, then vpmaddwd): each
    pair of uint8 × int8 products added in a saturating signed `lane`-bit integer, the
    pairs' sums added in 32 bits, then the codes' zero point of 128 taken off."""
    top = 2 ** (lane - 1)

    def kernel(unsigned: np.ndarray, parts: np.ndarray) -> np.ndarray:
        wide = parts.astype(np.int64)
        out = np.empty((len(unsigned), parts.shape[1]), dtype=np.int64)
        for start in range(0, len(unsigned), 200):  # a block's products stay small
            products = unsigned[start:start + 200].astype(np.int64)[:, :, None] * wide
            pairs = np.clip(products[:, 0::2] + products[:, 1::2], -top, top - 1)
            out[start:start + 200] = pairs.sum(axis=1)
        return (out - 128 * wide.sum(axis=0)).astype(np.int32)

    return kernel


AVX2 = pairwise_kernel(16)  # the real lane: what the parts' LIMIT is made for
NARROW = pairwise_kernel(14)  # a kernel that would saturate whatever the split


def test_the_hand_written_model_is_one_valid_matmulinteger():
    model = onnx.load_from_string(int8dot.model_bytes())
    onnx.checker.check_model(model, full_check=True)
    assert [n.op_type for n in model.graph.node] == ["MatMulInteger"]
    assert [i.name for i in model.graph.input] == ["A", "B"]


@pytest.mark.parametrize("rows", [0, 5, int8dot.FEW - 1, int8dot.FEW, 3000])
@pytest.mark.parametrize("queries", [None, 1, 4])
def test_scores_are_the_float_querys_to_float32_rounding(rows, queries):
    rng = np.random.default_rng(rows)
    codes = rng.integers(-128, 128, (rows, 48), dtype=np.int8)
    codes[:1] = -128  # the extremes: the top bit flipped, 0 and 255 as uint8
    codes[1:2] = 127
    shape = (48,) if queries is None else (48, queries)
    query = rng.standard_normal(shape).astype(np.float32)
    query[3] = 0.0
    got = int8dot.Query(query).scores(codes.copy())
    want = exact(codes, query)
    assert got.dtype == np.float32 and got.shape == want.shape
    if rows:
        assert np.abs(got - want).max() <= 1e-6 * np.abs(want).max()


def test_a_zero_query_scores_zero_and_tiny_ones_keep_their_precision():
    codes = np.random.default_rng(1).integers(-127, 128, (2000, 32), dtype=np.int8)
    assert not int8dot.Query(np.zeros(32, dtype=np.float32)).scores(codes.copy()).any()
    tiny = np.random.default_rng(2).standard_normal(32).astype(np.float32) * 1e-30
    want = exact(codes, tiny)
    assert np.abs(int8dot.Query(tiny).scores(codes.copy()) - want).max() <= 1e-6 * np.abs(
        want).max()


def test_threads_share_the_session():
    rng = np.random.default_rng(3)
    codes = rng.integers(-127, 128, (4000, 64), dtype=np.int8)
    queries = rng.standard_normal((16, 64)).astype(np.float32)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda q: int8dot.Query(q).scores(codes.copy()), queries))
    for q, got in zip(queries, results, strict=True):
        want = exact(codes, q)
        assert np.abs(got - want).max() <= 1e-6 * np.abs(want).max()


def test_one_query_scores_block_after_block_as_each_alone():
    """Its split is made once, by the first big block, and serves the blocks after."""
    rng = np.random.default_rng(4)
    query = int8dot.Query(rng.standard_normal(40).astype(np.float32))
    for rows in (int8dot.FEW + 5, 7, 2 * int8dot.FEW):
        codes = rng.integers(-127, 128, (rows, 40), dtype=np.int8)
        want = exact(codes, query.vector)
        assert np.abs(query.scores(codes.copy()) - want).max() <= 1e-6 * np.abs(want).max()


def test_a_kernel_that_saturates_pairs_in_16_bits_still_scores_exactly():
    """The worst case of the kernels without VNNI: codes of ±127 (and -128) against a
    query whose every part is at its largest (a constant query). Parts of ±127 would
    overflow a 16-bit pair (255 · 127 · 2 = 64,770); the split's are held to ±63."""
    codes = np.tile(np.array([127, -128, -127, 127], dtype=np.int8), (2 * int8dot.FEW, 96))
    codes[::3] = 127
    for query in (np.ones(384, np.float32), -np.ones(384, np.float32),
                  np.where(np.arange(384) % 2 == 0, 1.0, -1.0).astype(np.float32)):
        parts, _ = int8dot.split(query)
        assert np.abs(parts).max() == int8dot.LIMIT
        got = int8dot.integer_scores(codes.copy(), query, AVX2)
        want = exact(codes, query)
        assert np.abs(got - want).max() <= 1e-6 * np.abs(want).max()


def test_the_probe_passes_a_pair_saturating_kernel_and_the_real_one_here():
    assert int8dot.check(AVX2).exact
    assert int8dot.check(int8dot.onnx_kernel).exact  # onnxruntime's, on this CPU


def test_a_kernel_the_probe_finds_inexact_leaves_scoring_to_the_float_product():
    scoring = int8dot.Scoring(NARROW)
    with capture_logs() as logs:
        verdict = scoring.verdict
        assert scoring.verdict is verdict, "decided once a process"
    assert not verdict.exact and verdict.path == "float" and verdict.max_error > 1
    assert [e["event"] for e in logs] == ["retrieval.int8_inexact"]
    assert logs[0]["log_level"] == "warning" and "cpu_flags" in logs[0]
    rng = np.random.default_rng(7)
    codes = np.full((3 * int8dot.FEW, 384), 127, dtype=np.int8)
    query = np.abs(rng.standard_normal(384)).astype(np.float32)
    got = int8dot.Query(query, scoring).scores(codes.copy())
    want = codes.astype(np.float32) @ query
    assert np.array_equal(got, want), "the float path, not the kernel's wrong sums"
    narrowed = int8dot.integer_scores(codes.copy(), query, NARROW)
    assert np.abs(narrowed - want).max() > 0.01 * np.abs(want).max(), "NARROW is wrong"


def test_a_kernel_that_fails_to_run_is_not_trusted():
    def broken(unsigned: np.ndarray, parts: np.ndarray) -> np.ndarray:
        raise RuntimeError("no kernel for this CPU")

    verdict = int8dot.check(broken)
    assert not verdict.exact and "no kernel for this CPU" in verdict.why


def test_the_float_path_can_be_forced_and_says_so():
    scoring = int8dot.Scoring(AVX2, forced="float")
    assert scoring.verdict.path == "float" and "MEMORYD_SCORING=float" in scoring.verdict.why
    codes = np.full((2 * int8dot.FEW, 16), 3, dtype=np.int8)
    query = np.arange(16, dtype=np.float32)
    assert np.array_equal(int8dot.Query(query, scoring).scores(codes.copy()),
                          codes.astype(np.float32) @ query)
