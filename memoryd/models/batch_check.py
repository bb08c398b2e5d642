"""Proof, on the machine it runs on, that a text's vector does not depend on its batch.

Batches are formed by timing (a prefetch, pipelined writes, a bulk ingest, a reindex,
a sync), so a vector that depended on its batch-mates would make a memory's rank
depend on when it was written. The int8 model is built so that it cannot
(models/rowquant.py), but a kernel's numeric behaviour is not taken on trust: before
the embedder makes any vector, a few texts are embedded alone and in batches (in two
orders) and compared bit for bit. If they differ, every model call holds one text: as
slow as embedding alone, and as exact.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# Varied on purpose (a name, numbers, code, shouting, Chinese): texts whose activations
# differ in size, which is what made a batch's largest row set the others' precision.
PROBE = (
    "Caroline said she went to the LGBTQ support group yesterday and it was powerful.",
    "ERROR 503 at 03:14:15 UTC; retry budget 0x7fff exhausted!!! see /var/log/app.log",
    "我们家上个月搬到了上海，新的地址在浦东新区，孩子们都很喜欢新学校和新朋友。",
    "def merge(a: list[int], b: list[int]) -> list[int]: return sorted(a + b)  # O(n log n)",
    "The user prefers dark mode, short answers, and no emoji in commit messages at all.",
    "Deploys go through staging first; the canary takes 10% of traffic for 30 minutes.",
)
# Token counts the probe is cut to: a model call's texts share one (nothing is padded).
LENGTHS = (9, 33)

Run = Callable[[list[list[int]]], np.ndarray]  # one model call: token ids -> vectors


@dataclass(frozen=True)
class BatchVerdict:
    independent: bool
    why: str

    def describe(self) -> dict[str, object]:
        return {"independent": self.independent, "why": self.why}


def cut(ids: list[int], length: int) -> list[int]:
    """`ids` (with [CLS] first and [SEP] last) cut to `length` tokens, [SEP] kept last."""
    return ids[:length - 1] + ids[-1:]


def _rows(probe_ids: list[list[int]], length: int) -> list[list[int]]:
    return [cut(ids, length) for ids in probe_ids if len(ids) >= length]


def calls(probe_ids: list[list[int]], size: int) -> list[list[list[int]]]:
    """The probe as model calls of up to `size` texts, for each of `LENGTHS`, and each
    text alone: what another process's vectors are compared with, bit for bit."""
    out: list[list[list[int]]] = []
    for length in LENGTHS:
        rows = _rows(probe_ids, length)
        out += [rows[start:start + size] for start in range(0, len(rows), size)]
        out += [[row] for row in rows]
    return out


def check(run: Run, probe_ids: list[list[int]]) -> BatchVerdict:
    """Embed the probe (each text's token ids) alone, as one batch, and as one batch in
    reverse, for each of `LENGTHS`; every vector must be bit-identical to the text's
    vector alone."""
    differed, worst = False, 0.0
    for length in LENGTHS:
        rows = _rows(probe_ids, length)
        if len(rows) < 2:
            continue
        alone = np.concatenate([run([row]) for row in rows])
        together = run(rows)
        backwards = run(rows[::-1])[::-1]
        for batched in (together, backwards):
            if not np.array_equal(alone, batched):
                differed = True
                worst = max(worst, float(np.max(1.0 - np.sum(alone * batched, axis=1))))
    if not differed:
        return BatchVerdict(True, "the probe's vectors alone and in batches were "
                                  "bit-identical on this CPU")
    return BatchVerdict(False, f"the probe's vectors alone and in batches differed "
                               f"(1 - cosine up to {worst:.2g}): each text gets a model "
                               f"call of its own")
