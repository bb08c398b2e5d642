"""onnxruntime sessions tuned for a small, shared machine."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")  # before onnxruntime is imported

import onnxruntime as ort

if TYPE_CHECKING:  # onnx itself is imported only to change a model (slow to import)
    import onnx

# onnxruntime's fused SkipLayerNormalization kernel is slow on CPU for these small
# models: 0.90 ms of a MiniLM text's 3.7 ms (int8), against 0.15 ms for the Add and
# LayerNormalization it replaces (measured with onnxruntime 1.32's profiler). fp32
# vectors are the same to float rounding; int8 ones move as much as embedding a text in
# another batch moves them (cosine 0.997 on average; LoCoMo R@10 0.776 against 0.778).
DISABLED_OPTIMIZERS = ["SkipLayerNormFusion"]
# MultiHeadAttention's inputs that mask keys: key_padding_mask, attention_bias.
MASK_INPUTS = (4, 5)


def session(model: Path | bytes, threads: int = 1) -> ort.InferenceSession:
    """A session of the model in this file, or of these serialized model bytes."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    options.log_severity_level = 3
    source = model if isinstance(model, bytes) else str(model)
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"],
                                disabled_optimizers=DISABLED_OPTIMIZERS)


def unmasked(model: onnx.ModelProto, mask: str = "attention_mask") -> onnx.ModelProto:
    """The model without its attention mask, for calls whose texts all have one token
    count (nothing padded, so a mask hides nothing): every MultiHeadAttention loses its
    mask inputs, then the nodes, inputs and weights nothing reads any more go. Applying
    an all-ones mask still costs about a tenth of a text's time; the vectors are the
    same to 1e-6. Raises ValueError when the graph
    still needs `mask` afterwards (a model this does not know how to unmask)."""
    graph = model.graph
    for node in graph.node:
        if node.op_type == "MultiHeadAttention" and node.domain == "com.microsoft":
            for index in MASK_INPUTS:
                if index < len(node.input):
                    node.input[index] = ""
    needed = {output.name for output in graph.output}
    kept: list[onnx.NodeProto] = []
    for node in reversed(graph.node):  # nodes are in topological order
        if any(name in needed for name in node.output):
            kept.append(node)
            needed.update(name for name in node.input if name)
    if mask in needed:
        raise ValueError(f"the model still reads {mask} without its attention masks")
    del graph.node[:]
    graph.node.extend(reversed(kept))
    for field in (graph.input, graph.initializer):
        unused = [item for item in field if item.name not in needed]
        for item in unused:
            field.remove(item)
    return model


def ort_version() -> str:
    return str(ort.__version__)
