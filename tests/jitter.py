"""A pytest plugin that moves every real-model vector by a small noise of its text's own,
to find ranking tests that stand on a knife edge:

    MEMORYD_TEST_JITTER=0.1 .venv/bin/python -m pytest -p tests.jitter tests/retrieval

Each vector gets `size` × a unit Gaussian / √dim added (seeded by the text's token ids
and `MEMORYD_TEST_JITTER_SEED`), then is normalised again: 0.1 moves a vector by about
0.004 in cosine, twice what another CPU's kernels move the int8 model's vectors
(bench/README.md, "The embedder"). A text still gets one vector wherever it is
embedded. Without MEMORYD_TEST_JITTER the plugin changes nothing.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np

from memoryd.models import embedder

SIZE = float(os.environ.get("MEMORYD_TEST_JITTER", "0") or 0)
SEED = os.environ.get("MEMORYD_TEST_JITTER_SEED", "0")
_exact = embedder.vectors


def _jittered(model: object, ids: list[list[int]]) -> np.ndarray:
    out = _exact(model, ids)
    for i, row in enumerate(ids):
        digest = hashlib.blake2b(f"{SEED}:{row}".encode(), digest_size=8).digest()
        noise = np.random.default_rng(int.from_bytes(digest, "big")).standard_normal(
            out.shape[1]).astype(np.float32)
        moved = out[i] + SIZE * noise / np.sqrt(out.shape[1])
        out[i] = moved / np.linalg.norm(moved)
    return out


if SIZE > 0:
    # The embedder calls `vectors` by its module name: replacing it there is the seam.
    embedder.vectors = _jittered  # type: ignore[assignment]  # a module's function, replaced
