"""The int8 model: made once per user, checked by its sha256 before every load; the
fp32 weights are checked when they are loaded (to make it, or as the model)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from memoryd.models.assets import ModelError, locate_assets
from memoryd.models.embedder import INT8_ID, OnnxEmbedder
from memoryd.models.int8_model import quantized


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

    embedder = OnnxEmbedder(variant="int8", cache_dirs=[cache])
    assert embedder.model_id == INT8_ID
    assert embedder.inputs == ["input_ids", "token_type_ids"], \
        "made without its attention mask"
    reference = OnnxEmbedder()
    texts = ["Anne prefers tea in the morning", "the Postgres migration is postponed"]
    same = (embedder.embed(texts) * reference.embed(texts)).sum(1)
    assert np.all(same > 0.95), same  # the same model, quantised

    # Altered fp32 weights: refused where they would be loaded; the int8 model made
    # earlier is loaded without them (hashing their 90 MB is not on each start's path).
    assets = tmp_path / "assets"
    (assets / "onnx").mkdir(parents=True)
    real = locate_assets()
    for name in ("onnx/model.onnx", "tokenizer.json"):
        (assets / name).write_bytes((real / name).read_bytes())
    (assets / "onnx/model.onnx_data").write_bytes(b"not the weights")
    with pytest.raises(ModelError, match=r"model\.onnx_data has sha256"):
        OnnxEmbedder(assets=assets)
    with pytest.raises(ModelError, match=r"model\.onnx_data has sha256"):
        quantized(assets / "onnx/model.onnx", [tmp_path / "empty-cache"])
    from_cache = OnnxEmbedder(assets=assets, variant="int8", cache_dirs=[cache])
    assert np.allclose(from_cache.embed(texts), embedder.embed(texts))
    (assets / "tokenizer.json").write_text("{}")
    with pytest.raises(ModelError, match=r"tokenizer\.json has sha256"):
        OnnxEmbedder(assets=assets, variant="int8", cache_dirs=[cache])
