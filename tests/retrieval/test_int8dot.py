"""int8 codes scored on onnxruntime's integer product: the scores of the float query,
whatever the number of rows or queries, from many threads at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnx
import pytest

from memoryd.retrieval import int8dot


def exact(codes: np.ndarray, query: np.ndarray) -> np.ndarray:
    return codes.astype(np.float64) @ query.astype(np.float64)


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
