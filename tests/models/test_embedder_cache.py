"""The int8 model: made once per user, checked by its sha256 before every load."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from memoryd.models.embedder import INT8_ID, Embedder, locate_assets, quantized


def test_made_once_kept_with_its_digest_remade_when_damaged(tmp_path: Path, caplog) -> None:
    caplog.set_level(logging.INFO)
    fp32 = locate_assets() / "onnx" / "model.onnx"
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be")
    cache = tmp_path / "cache"
    made = quantized(fp32, [blocked / "models", cache])  # the first cannot be written
    assert made.parent == cache
    digest = made.with_name(made.name + ".sha256").read_text().strip()
    assert [r.getMessage() for r in caplog.records if r.name == "root"] == [], \
        "the quantizer's notes stay out of the log"
    stamp = made.stat().st_mtime_ns
    assert quantized(fp32, [blocked / "models", cache]) == made
    assert made.stat().st_mtime_ns == stamp, "a good copy is loaded, not made again"
    with made.open("r+b") as fh:  # damaged on disk
        fh.seek(made.stat().st_size // 2)
        fh.write(b"\0" * 64)
    assert quantized(fp32, [cache]) == made
    assert made.with_name(made.name + ".sha256").read_text().strip() == digest
    assert list(cache.glob(".*partial")) == []

    embedder = Embedder(variant="int8", cache_dirs=[cache])
    assert embedder.model_id == INT8_ID
    assert [i.name for i in embedder._session.get_inputs()] == ["input_ids", "token_type_ids"], \
        "made without its attention mask"
    reference = Embedder()
    texts = ["Anne prefers tea in the morning", "the Postgres migration is postponed"]
    same = (embedder.embed(texts) * reference.embed(texts)).sum(1)
    assert np.all(same > 0.95), same  # the same model, quantised
