"""The rerank stage, with a tiny ONNX cross-encoder this test builds itself.

The model scores a (query, passage) pair by counting one marker token: logit =
10 x count - 5, so sigmoid is ~1 for passages with the marker and ~0 without.
"""

from __future__ import annotations

import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper

from memoryd.models.assets import locate_assets
from memoryd.models.embedder import load_tokenizer
from memoryd.models.reranker import OnnxCrossEncoder


def build_cross_encoder(folder, marker: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer_path = locate_assets() / "tokenizer.json"
    shutil.copy(tokenizer_path, folder / "tokenizer.json")
    marker_id = load_tokenizer(tokenizer_path).encode(marker, add_special_tokens=False).ids[0]
    nodes = [
        helper.make_node("Equal", ["input_ids", "marker"], ["hit"]),
        helper.make_node("Cast", ["hit"], ["hit_f"], to=TensorProto.FLOAT),
        helper.make_node("ReduceSum", ["hit_f", "axes"], ["count"], keepdims=1),
        helper.make_node("Mul", ["count", "ten"], ["scaled"]),
        helper.make_node("Sub", ["scaled", "five"], ["logits"]),
    ]
    graph = helper.make_graph(
        nodes, "marker-counter",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["b", "s"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["b", "s"]),
         helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["b", "s"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["b", 1])],
        initializer=[helper.make_tensor("marker", TensorProto.INT64, [], [marker_id]),
                     helper.make_tensor("axes", TensorProto.INT64, [1], [1]),
                     helper.make_tensor("ten", TensorProto.FLOAT, [], [10.0]),
                     helper.make_tensor("five", TensorProto.FLOAT, [], [5.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(folder / "model.onnx"))


def test_cross_encoder_scores_pairs_with_sigmoid(tmp_path):
    build_cross_encoder(tmp_path / "ce", "banana")
    ce = OnnxCrossEncoder(tmp_path / "ce")
    scores = ce.score([("fruit", "a banana split"), ("fruit", "an apple pie"),
                       ("banana", "banana bread")])
    assert scores[0] > 0.99 and scores[1] < 0.01 and scores[2] > 0.99
    assert np.isclose(scores[1], 1 / (1 + np.exp(5)), atol=1e-6)


async def test_rerank_reorders_and_thresholds_the_results(make_harness, tmp_path):
    build_cross_encoder(tmp_path / "ce", "banana")
    h = await make_harness({"reranker": {"model_dir": str(tmp_path / "ce")}},
                           root=tmp_path / "root")
    best_dense = await h.write("The user's favourite fruit is the mango")
    marked = await h.write("Banana bread recipe from grandma, with walnuts")
    await h.write("The user buys fruit at the Saturday market")
    result = await h.call("memory_smart_search", query="favourite fruit", top_k=3)
    ids = [m["id"] for m in result["memories"]]
    assert ids == [marked], "only the reranker's pick clears the 0.35 threshold"
    assert result["memories"][0]["scores"]["rerank"] > 0.99
    explained = await h.call("memory_explain", query="favourite fruit")
    assert explained["reranker"] is True
    dropped = {c["id"]: c for c in explained["candidates"]}
    assert "below score_threshold" in dropped[best_dense]["reason"]
    everything = await h.call("memory_smart_search", query="favourite fruit", top_k=3,
                              score_threshold=0.0, mmr_lambda=1.0)
    assert everything["memories"][0]["id"] == marked
    assert len(everything["memories"]) == 3
