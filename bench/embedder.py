"""The embedder's variants on real turns: time a text, nearness to fp32, batch independence.

    .venv/bin/python bench/embedder.py [--texts 600] [--threads 1]

Embeds LoCoMo turns ("speaker: text", shuffled with a fixed seed) with each variant:
fp32; int8 as memoryd ships it (weights per channel in 7 bits, activations per row:
`memoryd/models/rowquant.py`); and int8 as `quantize_dynamic` alone makes it (one
activation scale per model call: the model before per-row quantisation), made in a
temporary folder. For each: ms a text alone and in model calls of up to 16 texts of one
token count (as the embedder batches), the share of texts whose vector is bit-identical
alone and batched (with the smallest cosine between the two), and the cosine to fp32
(mean, min). Prints the CPU's integer-kernel flags: the int8 timings depend on them.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from memoryd.models.assets import locate_assets  # noqa: E402
from memoryd.models.embedder import (  # noqa: E402
    MAX_TOKENS,
    by_tokens,
    clip,
    load_tokenizer,
    vectors,
)
from memoryd.models.int8_model import quantized  # noqa: E402
from memoryd.models.onnx import session, unmasked  # noqa: E402
from memoryd.retrieval.int8dot import cpu_flags  # noqa: E402

LOCOMO = REPO.parent / "shared" / "bench" / "locomo" / "locomo10.json"


def turns(count: int) -> list[str]:
    texts = [f"{t['speaker']}: {t['text']}"
             for conv in json.loads(LOCOMO.read_text())
             for key, value in conv["conversation"].items()
             if key.startswith("session_") and isinstance(value, list) for t in value]
    random.Random(1).shuffle(texts)
    return texts[:count]


def per_call_model(folder: Path) -> Any:
    """int8 as quantize_dynamic alone makes it: one activation scale per call."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    made = folder / "per-call.onnx"
    quantize_dynamic(str(locate_assets() / "onnx" / "model.onnx"), str(made),
                     per_channel=True, weight_type=QuantType.QInt8)
    return unmasked(onnx.load(str(made))).SerializeToString()


def measure(model: Any, ids: list[list[int]]) -> tuple[np.ndarray, np.ndarray, float, float]:
    vectors(model, ids[:1])  # warm
    start = time.perf_counter()
    alone = np.concatenate([vectors(model, [row]) for row in ids])
    alone_ms = (time.perf_counter() - start) / len(ids) * 1e3
    batched = np.empty_like(alone)
    start = time.perf_counter()
    for call in by_tokens(ids, 16):
        batched[call] = vectors(model, [ids[i] for i in call])
    batched_ms = (time.perf_counter() - start) / len(ids) * 1e3
    return alone, batched, alone_ms, batched_ms


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", type=int, default=600)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    import onnx

    texts = turns(args.texts)
    tokenizer = load_tokenizer(locate_assets() / "tokenizer.json", pad=False)
    ids = [e.ids for e in tokenizer.encode_batch([clip(t, MAX_TOKENS) for t in texts])]
    print(f"{len(texts)} LoCoMo turns, {sum(map(len, ids)) / len(ids):.1f} tokens on "
          f"average; {args.threads} thread(s); CPU flags: {' '.join(cpu_flags()) or '?'}")
    with tempfile.TemporaryDirectory(prefix="embedder-bench-") as tmp:
        fp32 = unmasked(onnx.load(str(locate_assets() / "onnx" / "model.onnx")))
        variants = {
            "fp32": session(fp32.SerializeToString(), args.threads),
            "int8 per row (shipped)": session(quantized(
                locate_assets() / "onnx" / "model.onnx", [Path(tmp)]), args.threads),
            "int8 per call (before)": session(per_call_model(Path(tmp)), args.threads),
        }
        reference: np.ndarray | None = None
        print(f"{'variant':24} {'ms alone':>9} {'ms batched':>11} {'bit-identical':>14} "
              f"{'min cos a/b':>12} {'cos fp32 mean':>14} {'min':>7}")
        for name, model in variants.items():
            alone, batched, alone_ms, batched_ms = measure(model, ids)
            reference = alone if reference is None else reference
            same = float(np.mean(np.all(alone == batched, axis=1)))
            to_fp32 = (alone * reference).sum(1)
            print(f"{name:24} {alone_ms:9.2f} {batched_ms:11.2f} {same:14.3f} "
                  f"{float((alone * batched).sum(1).min()):12.5f} "
                  f"{float(to_fp32.mean()):14.5f} {float(to_fp32.min()):7.5f}")


if __name__ == "__main__":
    main()
