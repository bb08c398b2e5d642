"""The int8 scoring path on this CPU: the start-up probe's verdict, and how far the
integer scores of 5,000 random unit codes are from the float64 product, for the split
memoryd uses and for the older one (three parts of ±127); then what one query costs on
each path, scoring 10,000 and 100,000 rows in the corpus's blocks (the best of 30).

    .venv/bin/python bench/int8dot.py
    qemu-x86_64 -cpu Haswell .venv/bin/python bench/int8dot.py   # AVX2 without VNNI

qemu-user (Debian's qemu-user) runs onnxruntime's own kernels on an emulated CPU, so a
machine with VNNI can see what one without it computes. /proc/cpuinfo is the host's
there: the flags printed are the host's, the kernels the emulated CPU's. qemu 7.2's
emulated AVX2 gets numpy's vectorised argsort wrong (its result is not sorted), so the
top 10 are found with heapq here, not numpy.
"""

from __future__ import annotations

import heapq
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from memoryd.retrieval import int8dot
from memoryd.retrieval.corpus import SCORE_BLOCK


def top10(scores: np.ndarray) -> set[int]:
    return set(heapq.nlargest(10, range(len(scores)), key=scores.__getitem__))


def main() -> None:
    print("cpu flags:", " ".join(int8dot.cpu_flags()) or "unknown")
    rng = np.random.default_rng(0)
    codes = rng.integers(-127, 128, (5000, 384), dtype=np.int8)
    query = rng.standard_normal(384)
    query /= np.linalg.norm(query)
    want = codes.astype(np.float64) @ query
    exact_top = top10(want)
    ours = int8dot.PARTS, int8dot.LIMIT
    for parts, limit, name in ((*ours, "memoryd's split"), (3, 127, "the older split")):
        int8dot.PARTS, int8dot.LIMIT = parts, limit
        verdict = int8dot.check(int8dot.onnx_kernel)
        got = int8dot.integer_scores(codes.copy(), query.astype(np.float32),
                                     int8dot.onnx_kernel)
        shared = len(exact_top & top10(got))
        print(f"{name} ({parts} parts of ±{limit}): probe {verdict.path} "
              f"(off by {verdict.max_error:.3g}x float32 rounding at most); 5,000 codes: "
              f"largest error {np.abs(got - want).max() / np.ptp(want):.2e} of the score "
              f"range, top 10 shares {shared} of 10 with the exact product")
        int8dot.PARTS, int8dot.LIMIT = ours
    exact, forced = int8dot.SCORING, int8dot.Scoring(int8dot.onnx_kernel, "float")
    for rows in (10_000, 100_000):
        many = rng.integers(-127, 128, (rows, 384), dtype=np.int8)
        costs = {}
        for scoring in (exact, forced):
            best = float("inf")
            for _ in range(30):
                started = time.perf_counter()
                q = int8dot.Query(query.astype(np.float32), scoring)
                for start in range(0, rows, SCORE_BLOCK):
                    q.scores(many[start:start + SCORE_BLOCK].copy())
                best = min(best, time.perf_counter() - started)
            costs[scoring.verdict.path] = best * 1000
        print(f"{rows:,} rows: " + ", ".join(f"{path} path {ms:.2f} ms"
                                             for path, ms in costs.items()))


if __name__ == "__main__":
    main()
