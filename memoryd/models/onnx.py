"""onnxruntime sessions tuned for a small, shared machine (research/tech.md §9)."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")  # before onnxruntime is imported

import onnxruntime as ort

# onnxruntime's fused SkipLayerNormalization kernel is slow on CPU for these small
# models: 0.90 ms of a MiniLM text's 3.7 ms (int8), against 0.15 ms for the Add and
# LayerNormalization it replaces (measured with onnxruntime 1.32's profiler). fp32
# vectors are the same to float rounding; int8 ones move as much as embedding a text in
# another batch moves them (cosine 0.997 on average; LoCoMo R@10 0.776 against 0.778).
DISABLED_OPTIMIZERS = ["SkipLayerNormFusion"]


def session(model: Path, threads: int = 1) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    options.log_severity_level = 3
    return ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"],
                                disabled_optimizers=DISABLED_OPTIMIZERS)


def ort_version() -> str:
    return ort.__version__
