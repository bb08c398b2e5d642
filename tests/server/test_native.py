"""The daemon's numpy runs one BLAS thread per caller (its readers are the parallelism)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SCRIPT = """
import os, sys
if sys.argv[1] == "daemon":
    from memoryd.server.native import one_blas_thread_per_caller
    one_blas_thread_per_caller()
before = len(os.listdir("/proc/self/task"))
import numpy
print(len(os.listdir("/proc/self/task")) - before)
"""


def _threads_numpy_starts(mode: str) -> int:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True,
                         text=True, timeout=120, check=True, env=env)
    return int(out.stdout)


@pytest.mark.skipif(not os.path.isdir("/proc/self/task") or (os.cpu_count() or 1) < 2,
                    reason="counts threads in /proc; a pool needs two cores")
def test_numpy_starts_no_blas_pool_in_the_daemon() -> None:
    assert _threads_numpy_starts("plain") >= 1  # a pool per core, which readers queue for
    assert _threads_numpy_starts("daemon") == 0


def test_a_users_own_setting_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    from memoryd.server.native import BLAS_THREADS, one_blas_thread_per_caller

    for name in BLAS_THREADS:  # restored after the test
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    one_blas_thread_per_caller()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "2"
    assert os.environ["MKL_NUM_THREADS"] == "1"
