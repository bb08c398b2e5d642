"""Per-row activation quantisation: a text's int8 vector depends on its text alone.

`quantize_dynamic` quantizes each matrix product's input with one scale for the whole
tensor, computed per call (DynamicQuantizeLinear): the largest activation of any text
in a batch sets every text's precision, so a text embedded alone and the same text
embedded beside others came out with different vectors (cosine 0.98-0.99 to itself).
This rewrite gives every row (one token of one text) a scale of its own, so a row's
codes, and so its vector, are the same in any batch, in any order.

A row x becomes codes round(x / s) + 128 with s = max|x| / 127: symmetric, so the
zero point is the one scalar 128 that onnxruntime's MatMulIntegerToFloat kernel takes.
That kernel takes a scale for all of A or for each of its columns, never one per row
(handed a per-row scale it misreads it silently: cosine 0.61 to fp32), so the product
is taken with a scale of 1 and each row is multiplied by its own scale after it.
Per row is also nearer fp32 than per tensor was (mean cosine 0.995 against 0.992).

The weights are quantized to 7 bits (`quantize_dynamic(reduce_range=True)`): x86
kernels without VNNI add each pair of uint8 × int8 products in a saturating 16-bit
lane, and 2 · 255 · 64 stays within it, so the integer sums are exact on every CPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import onnx

PREFIX = "per_row/"
ZERO_POINT = 128
LEVELS = 127.0
# A row of zeros gets this scale instead of 0 (x / 0 is NaN); its codes are then 128.
TINY = 1e-30


@dataclass(frozen=True)
class _Product:
    """One quantized matrix product as quantize_dynamic wrote it: MatMulInteger(codes,
    W), Cast to float, Mul by (the input's scale × W's per-column scales)."""

    codes: str  # the quantized input (a DynamicQuantizeLinear's first output)
    row_scale: str  # that input's scale, per row after the rewrite
    weight: str
    weight_zero_point: str
    weight_scale: str
    output: str  # the final Mul's output: what the rest of the graph reads


def per_row(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` (a `quantize_dynamic` output) with every dynamically quantized matrix
    product quantized per row. Raises ValueError on a graph of another shape."""
    from onnx import helper, numpy_helper

    graph = model.graph
    weights = {tensor.name for tensor in graph.initializer}
    quantizers = {n.output[0]: n for n in graph.node if n.op_type == "DynamicQuantizeLinear"}
    scales = {n.output[1] for n in quantizers.values()}
    scale_products = {n.output[0]: n for n in graph.node if n.op_type == "Mul"
                      and n.input[0] in scales and n.input[1] in weights}
    integer = {n.output[0]: n for n in graph.node if n.op_type == "MatMulInteger"}
    casts = {n.output[0]: n for n in graph.node
             if n.op_type == "Cast" and n.input[0] in integer}
    products: dict[str, _Product] = {}  # by the final Mul's name (its first output)
    for node in graph.node:
        if node.op_type == "Mul" and node.input[0] in casts and node.input[1] in scale_products:
            matmul = integer[casts[node.input[0]].input[0]]
            scaled = scale_products[node.input[1]]
            if matmul.input[0] not in quantizers or len(matmul.input) != 4:
                raise ValueError(f"{matmul.name}: an integer product of no dynamic quantizer")
            products[node.output[0]] = _Product(
                codes=matmul.input[0], row_scale=scaled.input[0], weight=matmul.input[1],
                weight_zero_point=matmul.input[3], weight_scale=scaled.input[1],
                output=node.output[0])
    replaced = {p.output for p in products.values()}
    gone = ({n.output[0] for n in integer.values()} | set(casts) | set(scale_products)
            | {q.output[2] for q in quantizers.values()})
    if len(products) != len(integer):
        raise ValueError(f"{len(integer)} integer products, {len(products)} of the known shape")

    constants = [
        numpy_helper.from_array(np.array(1.0 / LEVELS, np.float32), PREFIX + "inverse_levels"),
        numpy_helper.from_array(np.array(TINY, np.float32), PREFIX + "tiny"),
        numpy_helper.from_array(np.array([-1], np.int64), PREFIX + "last"),
        numpy_helper.from_array(np.array(ZERO_POINT, np.uint8), PREFIX + "zero_point"),
        numpy_helper.from_array(np.array([ZERO_POINT], np.uint8), PREFIX + "zero_points"),
        numpy_helper.from_array(np.array(1.0, np.float32), PREFIX + "one"),
    ]

    def c(name: str) -> str:
        return PREFIX + name

    nodes: list[onnx.NodeProto] = []
    for node in graph.node:
        if node.op_type == "DynamicQuantizeLinear":
            x, (codes, scale, _) = node.input[0], node.output
            p = f"{PREFIX}{codes}/"
            nodes += [  # s = max|x| / 127 per row, kept (…, 1) to scale the product
                helper.make_node("Abs", [x], [p + "abs"]),
                helper.make_node("ReduceMax", [p + "abs", c("last")], [p + "max"], keepdims=1),
                helper.make_node("Mul", [p + "max", c("inverse_levels")], [p + "scale"]),
                helper.make_node("Max", [p + "scale", c("tiny")], [scale]),
                # QuantizeLinear's per-axis scale is 1-D: the rows as (rows, K), axis 0
                helper.make_node("Reshape", [scale, c("last")], [p + "scales"]),
                helper.make_node("Shape", [p + "scales"], [p + "rows"]),
                helper.make_node("Expand", [c("zero_points"), p + "rows"], [p + "zeros"]),
                helper.make_node("Shape", [x], [p + "shape"]),
                helper.make_node("Shape", [x], [p + "width"], start=-1),
                helper.make_node("Concat", [c("last"), p + "width"], [p + "flat"], axis=0),
                helper.make_node("Reshape", [x, p + "flat"], [p + "rows_x"]),
                helper.make_node("QuantizeLinear", [p + "rows_x", p + "scales", p + "zeros"],
                                 [p + "rows_q"], axis=0),
                helper.make_node("Reshape", [p + "rows_q", p + "shape"], [codes]),
            ]
        elif node.output and node.output[0] in replaced:
            product = products[node.output[0]]
            columns = f"{PREFIX}{product.output}/columns"
            nodes += [
                helper.make_node("MatMulIntegerToFloat",
                                 [product.codes, product.weight, c("one"), product.weight_scale,
                                  c("zero_point"), product.weight_zero_point],
                                 [columns], domain="com.microsoft"),
                helper.make_node("Mul", [columns, product.row_scale], [product.output]),
            ]
        elif not (node.output and node.output[0] in gone):
            nodes.append(node)
    for node in nodes:
        if dangling := [name for name in node.input if name in gone]:
            raise ValueError(f"{node.name or node.op_type} reads {dangling[0]}, which per-row "
                             f"quantization replaces")
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(constants)
    del graph.value_info[:]  # shapes of the replaced tensors changed; onnxruntime infers them
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return model
