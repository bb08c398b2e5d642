"""Native libraries set up for a daemon whose parallelism is its own reader threads.

numpy's BLAS (OpenBLAS in the wheels) spreads each product over every core, and calls
from several threads at once queue for its one pool: four reader threads scoring at
once ran at 0.6x the throughput of one (bench/concurrency.py, 100k memories). With one
BLAS thread per caller they run side by side: 1.8x on 2 cores, and one search alone is
faster too. It must be set before numpy is first imported; a user's own setting wins.
"""

from __future__ import annotations

import os

BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")


def one_blas_thread_per_caller() -> None:
    for name in BLAS_THREADS:
        os.environ.setdefault(name, "1")
