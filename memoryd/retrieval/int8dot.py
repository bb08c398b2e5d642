"""Scores of int8 codes against float queries, on onnxruntime's integer matrix product.

numpy has no integer matrix product worth the name: scoring the corpus's int8 codes
meant turning them into float32 first, and that copy cost most of it. onnxruntime's
MatMulInteger multiplies 8-bit integers into 32-bit sums without it.

Each query is split into `PARTS` int8 vectors, each quantizing what the ones before it
missed (q = s1 q1 + ... + s4 q4 + a rest of at most max|q| / 126⁴): the sums are exact
integers, so the scores are the float query's to about float32 rounding. The codes go
in as uint8 with a zero point of 128 (the kernel's fast path: uint8 times int8);
flipping the top bit of a two's-complement byte adds 128.

"Exact integers" depends on the kernel. On x86 without VNNI (AVX2, and AVX-512 without
VNNI) the u8×s8 kernel adds each pair of products in a saturating 16-bit lane, so a
pair must stay within ±32,767: the parts are held to ±`LIMIT` (255 · 63 · 2 = 32,130).
No CPU's kernel is trusted on that reasoning alone: before the integer path scores
anything in a process, `Scoring.verdict` scores a fixed probe of extreme codes with it and
with a float64 product. If the two differ by more than float32 rounding, the process
scores with numpy's float product for its whole life (logged as
`retrieval.int8_inexact`, named by `memoryctl status`).

The model, one node, is written out here as protobuf bytes: importing the `onnx`
package to build it takes 0.25 s, at the start of every daemon that searches.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import structlog

if TYPE_CHECKING:
    from onnxruntime import InferenceSession

log = structlog.get_logger("memoryd.retrieval")

PARTS = 4
# A part's largest magnitude: a pair of uint8 × part products must fit a signed 16-bit
# lane (2 · 255 · 63 = 32,130), the kernels without VNNI add them there, saturating.
LIMIT = 63
# Below this many rows numpy's float product is as fast: splitting the query and the
# call cost about 0.1 ms.
FEW = 1000
_UINT8, _INT8, _INT32 = 2, 3, 6  # onnx.TensorProto data types

# (rows, dim) uint8 codes times (dim, n) int8 parts, as int32 sums with a zero point
# of 128 on the codes: what MatMulInteger computes.
Kernel = Callable[[np.ndarray, np.ndarray], np.ndarray]


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


def onnx_kernel(unsigned: np.ndarray, parts: np.ndarray) -> np.ndarray:
    """The integer product on onnxruntime (imported when first needed)."""
    global _session
    with _lock:
        if _session is None:
            from memoryd.models.onnx import session

            _session = session(model_bytes())
    product: np.ndarray = _session.run(None, {"A": unsigned, "B": parts})[0]
    return product


def split(query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int8 (dim, m · PARTS), float64 (m · PARTS, m)): each of the m query columns as
    PARTS integer vectors within ±LIMIT (query 0's parts first), and the weights that
    sum each column's parts back: `(codes @ parts) @ weights` is `codes @ query`."""
    rest = query.reshape(len(query), -1).astype(np.float64)
    m = rest.shape[1]
    parts = np.empty((len(query), m, PARTS), dtype=np.int8)
    weights = np.zeros((m, PARTS, m))
    for k in range(PARTS):
        peak = np.abs(rest).max(axis=0)
        scale = np.where(peak > 0, peak / LIMIT, 1.0)
        part = np.rint(rest / scale)
        rest -= part * scale
        parts[:, :, k] = part
        weights[np.arange(m), k, np.arange(m)] = scale
    return parts.reshape(len(query), -1), weights.reshape(m * PARTS, m)


def _product(codes: np.ndarray, parts: np.ndarray, weights: np.ndarray,
             kernel: Kernel) -> np.ndarray:
    """`codes @ query` from the query's split, float64. The codes are overwritten (their
    top bit flipped: two's complement + 128)."""
    unsigned = codes.view(np.uint8)
    unsigned ^= 0x80
    scores: np.ndarray = kernel(unsigned, parts) @ weights
    return scores


def integer_scores(codes: np.ndarray, query: np.ndarray, kernel: Kernel) -> np.ndarray:
    """`codes @ query` through `kernel` on the query's parts, float64, (rows,) for a
    query (dim,), (rows, m) for (dim, m). The codes are overwritten: pass a copy."""
    return _product(codes, *split(query), kernel).reshape(len(codes), *query.shape[1:])


def _probe() -> tuple[np.ndarray, np.ndarray]:
    """Codes and queries that reach every extreme a kernel could get wrong: rows of one
    value (-128, 127, -127), alternating signs, and random rows, against queries whose
    parts are all at ±LIMIT (a constant, alternating signs) and random ones."""
    dim = 384
    rng = np.random.default_rng(20261126)
    codes = rng.integers(-128, 128, (3 * FEW, dim), dtype=np.int8)
    alternating = np.where(np.arange(dim) % 2 == 0, 127, -128).astype(np.int8)
    for k, row in enumerate((np.full(dim, -128), np.full(dim, 127), np.full(dim, -127),
                             alternating, -1 - alternating)):
        codes[k::FEW] = row
    signs = np.where(np.arange(dim) % 2 == 0, 1.0, -1.0)
    queries = np.stack([np.ones(dim), -np.ones(dim), signs, -signs,
                        *rng.standard_normal((4, dim))], axis=1)
    return codes, queries.astype(np.float32).astype(np.float64)


@dataclass(frozen=True)
class Verdict:
    """Which path scores in this process, and why."""

    exact: bool
    max_error: float  # the probe's largest error, in units of its float32 tolerance
    why: str

    @property
    def path(self) -> str:
        return "int8" if self.exact else "float"

    def describe(self) -> dict[str, object]:
        return {"path": self.path, "why": self.why}


def check(kernel: Kernel) -> Verdict:
    """Score the probe with `kernel` and with a float64 product, one query at a time
    (a search's shape) and all at once (several queries'). The integer path's only
    errors are the query's rest and float32 rounding of the sums: both far below four
    float32 epsilons of the products' absolute sum, which saturating even one pair of
    products exceeds by orders of magnitude. Blocks of rows keep the float64 copies
    small (whole, they stayed in the daemon's heap: 20 MB)."""
    codes, queries = _probe()
    error = 0.0
    try:
        for start in range(0, len(codes), 250):
            block = codes[start:start + 250]
            exact = block.astype(np.float64)
            want = exact @ queries
            tolerance = 4 * np.finfo(np.float32).eps * (np.abs(exact) @ np.abs(queries))
            together = integer_scores(block.copy(), queries, kernel)
            alone = np.stack([integer_scores(block.copy(), q, kernel) for q in queries.T],
                             axis=1)
            error = max(error, float((np.abs(together - want) / tolerance).max()),
                        float((np.abs(alone - want) / tolerance).max()))
    except Exception as exc:  # a kernel that cannot run is as good as a wrong one
        return Verdict(False, float("inf"), f"the integer product failed: {exc}")
    if error <= 1.0:
        return Verdict(True, error, "the probe's integer scores were exact on this CPU")
    return Verdict(False, error, f"the probe's integer scores were off by {error:.3g}x "
                                 "float32 rounding on this CPU")


def cpu_flags() -> list[str]:
    """The CPU's instruction-set flags that decide the integer kernels (Linux only)."""
    try:
        info = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return []
    for line in info.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return sorted(f for f in value.split()
                          if f.startswith(("avx", "sse4", "asimd", "vnni", "i8mm")))
    return []


class Scoring:
    """An integer kernel and this process's verdict on it, decided once, on first use
    (about 20 ms): the integer path scores only where the verdict says it is exact.
    `forced` "float" keeps to the float product without asking (a benchmark of it, or a
    user who wants it)."""

    def __init__(self, kernel: Kernel, forced: str | None = None) -> None:
        self.kernel = kernel
        self._verdict: Verdict | None = None
        if forced == "float":
            self._verdict = Verdict(False, 0.0, f"{FORCE}=float")
        self._lock = threading.Lock()

    @property
    def verdict(self) -> Verdict:
        with self._lock:
            if self._verdict is None:
                self._verdict = check(self.kernel)
                if self._verdict.exact:
                    log.info("retrieval.int8_exact", max_error=round(self._verdict.max_error, 4))
                else:
                    log.warning("retrieval.int8_inexact", why=self._verdict.why,
                                cpu_flags=cpu_flags())
            return self._verdict


# The daemon's: onnxruntime's kernel, checked on the CPU it runs on (or the float path,
# when the environment says so).
FORCE = "MEMORYD_SCORING"
SCORING = Scoring(onnx_kernel, os.environ.get(FORCE))


class Query:
    """A float query (dim,) or (dim, m) scored against blocks of int8 codes: split into
    its int8 parts once, when the first block of FEW rows or more needs them, and only
    where `scoring`'s verdict says the integer path is exact (else numpy's float
    product)."""

    def __init__(self, vector: np.ndarray, scoring: Scoring = SCORING) -> None:
        self.vector = vector
        self.scoring = scoring
        self._split: tuple[np.ndarray, np.ndarray] | None = None

    def scores(self, codes: np.ndarray) -> np.ndarray:
        """`codes.astype(float32) @ vector` for int8 `codes` (rows, dim), as float32.
        The codes may be overwritten: pass a copy."""
        if len(codes) < FEW or not self.scoring.verdict.exact:
            exact: np.ndarray = (codes.astype(np.float32) @ self.vector).astype(np.float32)
            return exact
        if self._split is None:
            self._split = split(self.vector)
        out = _product(codes, *self._split, self.scoring.kernel).astype(np.float32)
        return out.reshape(len(codes), *self.vector.shape[1:])
