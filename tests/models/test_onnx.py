"""The embedder's model runs without its attention mask: every call's texts have one
token count, and the vectors are the masked model's. The real model."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from memoryd.models.assets import locate_assets
from memoryd.models.embedder import ModelCall, OnnxEmbedder, load_tokenizer
from memoryd.models.onnx import session, unmasked

TEXTS = ["Anne prefers tea in the morning", "the Postgres migration is postponed",
         "1 2 3 4 5 6 7 8 9 10 11 12", "a",
         "Caroline (8 May 2023): I went to a LGBTQ support group yesterday."]


def _masked_vectors(model: onnx.ModelProto) -> np.ndarray:
    """The vectors as the masked model makes them: one call, padded to the longest."""
    tokenizer = load_tokenizer(locate_assets() / "tokenizer.json", pad=True)
    encoded = tokenizer.encode_batch(TEXTS)
    ids = np.array([e.ids for e in encoded], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
    hidden = session(model.SerializeToString()).run(
        None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(1) / weights.sum(1)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def test_the_unmasked_model_makes_the_masked_models_vectors() -> None:
    original = onnx.load(str(locate_assets() / "onnx" / "model.onnx"))
    masked = _masked_vectors(original)
    model = unmasked(original)
    assert [i.name for i in model.graph.input] == ["input_ids", "token_type_ids"]
    assert not any("attention_mask" in node.input for node in model.graph.node)
    assert {i.name for i in model.graph.initializer} <= {
        name for node in model.graph.node for name in node.input}, "no weight left unread"
    embedder = OnnxEmbedder()
    got = embedder.embed(TEXTS)  # one call per token count, nothing padded
    assert np.abs(got - masked).max() < 1e-5


def test_a_model_call_of_texts_with_different_token_counts_is_refused() -> None:
    embedder = OnnxEmbedder()
    ids = embedder.tokenize(TEXTS[:2])
    assert len(ids[0]) != len(ids[1])
    with pytest.raises(ValueError, match="one token count"):
        embedder.run_model(ModelCall(TEXTS[:2], ids))


def test_a_model_that_reads_its_mask_elsewhere_is_not_unmasked() -> None:
    """A mask that feeds anything but MultiHeadAttention's mask inputs cannot go: the
    model would read padding. Here it scales the output."""
    ids = helper.make_tensor_value_info("input_ids", TensorProto.FLOAT, [1, 4])
    mask = helper.make_tensor_value_info("attention_mask", TensorProto.FLOAT, [1, 4])
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Mul", ["input_ids", "attention_mask"],
                                                ["out"])], "g", [ids, mask], [out])
    model = helper.make_model(graph)
    with pytest.raises(ValueError, match="attention_mask"):
        unmasked(model)
    assert [n.op_type for n in model.graph.node] == ["Mul"], "left as it was"
    assert len(model.graph.input) == 2
