"""Scores of int8 codes against float queries, on onnxruntime's integer matrix product.

numpy has no integer matrix product worth the name: scoring the corpus's int8 codes
meant turning them into float32 first, and that copy cost most of it (13,000 rows of
384: 2.6 ms of about 4). onnxruntime's MatMulInteger multiplies 8-bit integers into
32-bit sums without it (VNNI where the CPU has it).

Each query is split into `PARTS` int8 vectors, each quantizing what the ones before
it missed (q = s1 q1 + s2 q2 + s3 q3 + a rest of at most max|q| / 254³): the sums
are exact integers, so the scores are the float query's to about float32 rounding.
The codes go in as uint8 with a zero point of 128 (the kernel's fast path: uint8
times int8); flipping the top bit of a two's-complement byte adds 128.

The model, one node, is written out here as protobuf bytes: importing the `onnx`
package to build it takes 0.25 s, at the start of every daemon that searches.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from onnxruntime import InferenceSession

PARTS = 3
# Below this many rows numpy's float product is as fast: splitting the query and the
# call cost about 0.1 ms (1,000 rows of 384: 0.23 ms either way; 10,000: 4.3 against
# 2.2 ms).
FEW = 1000
_UINT8, _INT8, _INT32 = 2, 3, 6  # onnx.TensorProto data types


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _number(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _bytes(field: int, data: bytes | str) -> bytes:
    data = data.encode() if isinstance(data, str) else data
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _tensor_type(name: str, elem_type: int, dims: list[str]) -> bytes:
    """A ValueInfoProto: a tensor of `elem_type` whose dimensions are all symbolic."""
    shape = b"".join(_bytes(1, _bytes(2, d)) for d in dims)  # TensorShapeProto.dim
    tensor = _number(1, elem_type) + _bytes(2, shape)  # TypeProto.Tensor
    return _bytes(1, name) + _bytes(2, _bytes(1, tensor))


def model_bytes() -> bytes:
    """Y = MatMulInteger(A, B, 128): A (rows, dim) uint8, B (dim, n) int8, Y int32."""
    node = (_bytes(1, "A") + _bytes(1, "B") + _bytes(1, "zero") + _bytes(2, "Y")
            + _bytes(4, "MatMulInteger"))
    zero = _number(2, _UINT8) + _bytes(8, "zero") + _bytes(9, bytes([128]))  # a scalar
    graph = (_bytes(1, node) + _bytes(2, "int8dot") + _bytes(5, zero)
             + _bytes(11, _tensor_type("A", _UINT8, ["rows", "dim"]))
             + _bytes(11, _tensor_type("B", _INT8, ["dim", "n"]))
             + _bytes(12, _tensor_type("Y", _INT32, ["rows", "n"])))
    opset = _bytes(1, "") + _number(2, 13)
    return _number(1, 8) + _bytes(7, graph) + _bytes(8, opset)  # ir_version 8, opset 13


_session: InferenceSession | None = None
_lock = threading.Lock()


def _model() -> InferenceSession:
    global _session
    with _lock:
        if _session is None:  # onnxruntime is imported when first needed
            from memoryd.models.onnx import session

            _session = session(model_bytes())
        return _session


def split(query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int8 (dim, m · PARTS), float64 (m · PARTS, m)): each of the m query columns as
    PARTS integer vectors (query 0's parts first), and the weights that sum each
    column's parts back: `(codes @ parts) @ weights` is `codes @ query`."""
    rest = query.reshape(len(query), -1).astype(np.float64)
    m = rest.shape[1]
    parts = np.empty((len(query), m, PARTS), dtype=np.int8)
    weights = np.zeros((m, PARTS, m))
    for k in range(PARTS):
        peak = np.abs(rest).max(axis=0)
        scale = np.where(peak > 0, peak / 127, 1.0)
        part = np.rint(rest / scale)
        rest -= part * scale
        parts[:, :, k] = part
        weights[np.arange(m), k, np.arange(m)] = scale
    return parts.reshape(len(query), -1), weights.reshape(m * PARTS, m)


class Query:
    """A float query (dim,) or (dim, m) scored against blocks of int8 codes: split into
    its int8 parts once, when the first block of FEW rows or more needs them."""

    def __init__(self, vector: np.ndarray) -> None:
        self.vector = vector
        self._split: tuple[np.ndarray, np.ndarray] | None = None

    def scores(self, codes: np.ndarray) -> np.ndarray:
        """`codes.astype(float32) @ vector` for int8 `codes` (rows, dim), as float32.
        The codes may be overwritten: pass a copy."""
        if len(codes) < FEW:
            return (codes.astype(np.float32) @ self.vector).astype(np.float32)
        if self._split is None:
            self._split = split(self.vector)
        parts, weights = self._split
        unsigned = codes.view(np.uint8)
        unsigned ^= 0x80  # two's complement + 128
        out = (_model().run(None, {"A": unsigned, "B": parts})[0] @ weights).astype(
            np.float32)
        return out.reshape(len(codes), *self.vector.shape[1:])
