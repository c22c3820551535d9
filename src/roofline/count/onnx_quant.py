"""Quantized ONNX nodes counted with the aten formulas: the QDQ format's QuantizeLinear/DequantizeLinear, the
QOperator format's QLinear* ops, dynamic quantization (DynamicQuantizeLinear, MatMulInteger, ConvInteger and
ORT's fused DynamicQuantizeMatMul, MatMulIntegerToFloat), ORT's QGemm, QAttention, QEmbedLayerNormalization,
QOrderedMatMul, DynamicQuantizeLSTM, the NHWC transformer's NhwcMaxPool on uint8 tensors, and weight-only int4 (MatMulNBits,
GatherBlockQuantized).

Conventions (on top of count/onnx_ops.py's):
- An integer product counts its multiply-accumulates as FLOPs exactly as the float op does (2 per MAC, the aten
  formula of the float op on the integer operands): "FLOPs" of an int8 node are integer operations, to be judged
  against an int8 roof (``compute_dtype`` says which dtype a node computes in, so the roofline can look one up).
- The requantisation of a QLinear op's result to its output scale and zero point is not counted (at most a
  multiply, an add and a clamp per output element, small against a product's; the aten formulas count none
  either); QuantizeLinear counts 4 FLOPs per element (divide by the scale, round, add the zero point, saturate),
  DequantizeLinear 2 (subtract the zero point, multiply by the scale), DynamicQuantizeLinear 2 more for the
  min/max it reduces over x first: count/quantized.py's constants, as the torch ops count.
- Bytes: every input (quantized tensors, scales, zero points, int32 biases) read once at its real dtype and every
  output written once, as for fused nodes: what the node's own inputs and outputs hold.
- MatMulNBits and GatherBlockQuantized (int4 weights packed two to a byte): the products (or the gathered rows)
  of the float op at the activation's dtype; the weight's dequantisation (2 FLOPs per weight element used) is
  counted; bytes are the packed weight's real bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import roofline.count.onnx_ops as base
from roofline.count.meta import TensorMeta
from roofline.count.quantized import DEQUANTIZE_FLOPS, MINMAX_FLOPS, QUANTIZE_FLOPS
from roofline.count.registry import OpCost, nbytes

# the dtypes of quantized operands (analyze/integer_roofs.py judges ops computing in them against an integer roof)
INTEGER_DTYPES = ("int8", "uint8", "int16", "uint16", "int4", "uint4")

# ops whose products run on integer operands: the dtype of their (quantized) first operand is the compute dtype
INTEGER_COMPUTE = frozenset({
    "QLinearConv", "QLinearMatMul", "QLinearAdd", "QLinearMul", "QLinearGlobalAveragePool", "QLinearAveragePool",
    "QLinearSigmoid", "QLinearLeakyRelu", "QLinearSoftmax", "QLinearConcat", "QGemm", "MatMulInteger",
    "ConvInteger", "QAttention", "QOrderedMatMul", "QLinearReduceMean", "DynamicQuantizeMatMul",
    "MatMulIntegerToFloat",
})

Metas = base.Metas


def compute_dtype(op_type: str, inputs: Metas) -> str | None:
    """The integer dtype an integer-product node computes in (int8/uint8...), None for every other node (their
    float operand's dtype holds). DynamicQuantizeMatMul quantizes its float A to uint8 inside the node."""
    if op_type not in INTEGER_COMPUTE:
        return None
    if op_type == "QLinearConcat":
        ins = [m for m in inputs[2:] if m is not None]
    else:
        ins = [m for m in inputs if m is not None]
    if op_type == "DynamicQuantizeMatMul":
        return "uint8"
    ints = [m.dtype for m in ins if m.dtype in INTEGER_DTYPES]
    return ints[0] if ints else None


def _pick(ins: Metas, *positions: int) -> list[TensorMeta | None]:
    return [ins[i] if len(ins) > i else None for i in positions]


def _fused(part: tuple[OpCost, str], ins: Metas, outs: Metas, note: str = "") -> tuple[OpCost, str]:
    return base._combine([part], ins, outs, note=note)


def _per_element(flops_per_element: int, name: str):
    def formula(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
        x = ins[0]
        if x is None or not outs:
            raise ValueError(f"{name} without shapes")
        flops = flops_per_element * x.numel
        return OpCost(float(flops), float(nbytes(base._present(ins)) + nbytes(outs)), True), f"aten::{name}"

    return formula


def _dynamic_quantize(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """DynamicQuantizeLinear(x) -> y (uint8), y_scale, y_zero_point: min/max over x, then quantize. x is read
    once (the minimum: a kernel that keeps it in cache between the passes)."""
    x = ins[0]
    if x is None or not outs:
        raise ValueError("DynamicQuantizeLinear without shapes")
    flops = (MINMAX_FLOPS + QUANTIZE_FLOPS) * x.numel
    return OpCost(float(flops), float(x.nbytes + nbytes(outs)), True), "aten::aminmax + aten::quantize_per_tensor"


def _channels_first(m: TensorMeta | None, attrs: Mapping[str, Any], nhwc: bool = False) -> TensorMeta | None:
    """A channels-last (NHWC) tensor of ORT's NHWC transformer as NCHW, for the aten formulas' layout."""
    if m is None or not (nhwc or int(attrs.get("channels_last", 0) or 0)) or m.ndim < 3:
        return m
    return TensorMeta((m.shape[0], m.shape[-1]) + tuple(m.shape[1:-1]), m.dtype)


def _qlinear_conv(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B): the convolution on x and w."""
    x, w, b = _pick(ins, 0, 3, 8)
    y = [_channels_first(m, attrs) for m in outs]
    conv = base._conv([_channels_first(x, attrs), w, b], y, {k: v for k, v in attrs.items() if k != "activation"})
    return _fused(conv, ins, outs)


def _conv_integer(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """ConvInteger(x, w, x_zp, w_zp) -> int32."""
    return _fused(base._conv(list(_pick(ins, 0, 1)), outs, attrs), ins, outs)


def _matmul_of(a_pos: int, b_pos: int):
    """An integer MatMul: A at ``a_pos``, B at ``b_pos``. A B that ORT prepacked at session start is missing from
    the profile's inputs (the scalars after it move up: a 0-d or 1-d tensor where B should be): its (K, N) shape
    comes from A's and the output's, and its bytes are counted at A's integer width."""

    def formula(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
        a, b = _pick(ins, a_pos, b_pos)
        if (b is None or b.ndim < 2) and a is not None and outs:
            b = base._prepacked_weight(a, outs[0])
            ins = list(ins) + [b]
        return _fused(base._matmul([a, b], outs, {}), ins, outs)

    return formula


def _dynamic_quantize_matmul(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """DynamicQuantizeMatMul(A float, B int8, b_scale, b_zp, bias): A quantized (min/max, quantize), the integer
    product, its result dequantized (2 FLOPs an output element) and the bias added."""
    a, b, bias = _pick(ins, 0, 1, 4)
    if a is None or not outs:
        raise ValueError("DynamicQuantizeMatMul without shapes")
    if b is None:
        b = base._prepacked_weight(a, outs[0])
    out = outs[0]
    parts = [(OpCost(float((MINMAX_FLOPS + QUANTIZE_FLOPS) * a.numel), 0.0, True), "aten::quantize_per_tensor"),
             base._matmul([a, b], outs, {}),
             (OpCost(float(DEQUANTIZE_FLOPS * out.numel), 0.0, True), "aten::dequantize")]
    if bias is not None:
        parts.append(base._aten("add", [out, bias], [out]))
    return base._combine(parts, ins, outs)


def _matmul_integer_to_float(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zp, b_zp, bias): the integer product, its int32 result
    scaled to float (1 FLOP an output element) and the bias added."""
    a, b, bias = _pick(ins, 0, 1, 6)
    if a is None or not outs:
        raise ValueError("MatMulIntegerToFloat without shapes")
    if b is None:
        b = base._prepacked_weight(a, outs[0])
    out = outs[0]
    parts = [base._matmul([a, b], outs, {}), (OpCost(float(out.numel), 0.0, True), "aten::mul")]
    if bias is not None:
        parts.append(base._aten("add", [out, bias], [out]))
    return base._combine(parts, ins, outs)


def _qgemm(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """QGemm(A, a_scale, a_zp, B, b_scale, b_zp, C, y_scale, y_zp): Gemm on A, B (transA/transB) and C."""
    a, b, c = _pick(ins, 0, 3, 6)
    return _fused(base._gemm([a, b, c], outs, attrs), ins, outs)


def _qlinear_binary(name: str):
    def formula(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
        a, b = _pick(ins, 0, 3)
        return _fused(base._aten(name, base._present([a, b]), outs), ins, outs)

    return formula


def _qlinear_unary(name: str):
    def formula(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
        return _fused(base._aten(name, [ins[0]], outs), ins, outs)

    return formula


def _qlinear_pool(kind: str, nhwc: bool = False):
    """A pooling of quantized values (QLinear pools, and the NHWC transformer's NhwcMaxPool on uint8 tensors)."""
    pool = base._pool_by_shapes(kind) if kind in ("avg", "max") else base._pool(kind)

    def formula(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
        x = _channels_first(ins[0], attrs, nhwc)
        y = [_channels_first(m, attrs, nhwc) for m in outs]
        return _fused(pool([x], y, attrs), ins, outs)

    return formula


def _qlinear_softmax(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    return _fused(base._softmax([ins[0]], outs, attrs), ins, outs)


def _qlinear_concat(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """QLinearConcat(y_scale, y_zp, (x, x_scale, x_zp)...): a copy of the tensors into the output."""
    tensors = [m for m in ins[2::3] if m is not None]
    return _fused(base._aten("cat", [tensors, int(attrs.get("axis", 0))], outs), ins, outs)


def _qlinear_reduce_mean(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    return _fused(base._reduction("mean", [ins[0]], outs, attrs), ins, outs)


def _qattention(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """QAttention(input, weight, bias, input_scale, weight_scale, mask_index, input_zp, weight_zp, past): the
    packed QKV product on the quantized input and weight, then the attention core (as Attention)."""
    x, w, bias = _pick(ins, 0, 1, 2)
    cost, name = base._attention([x, w, bias], outs, attrs)
    return _fused((cost, name), ins, outs)


def _qembed_layer_norm(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """QEmbedLayerNormalization(input_ids, segment_ids, word, position, segment, gamma, beta (all quantized),
    mask, their scales, their zero points): EmbedLayerNormalization's FLOPs on the looked-up rows, plus their
    dequantisation (2 FLOPs an element, each of the three lookups); every input read once."""
    cost, name = base._embed_layer_norm(list(ins[:7]), outs, attrs)
    if not cost.modeled or not outs:
        return cost, name
    tables = len([m for m in ins[2:5] if m is not None])
    parts = [(cost, name), (OpCost(float(DEQUANTIZE_FLOPS * tables * outs[0].numel), 0.0, True), "aten::dequantize")]
    return base._combine(parts, ins, outs)


def _dynamic_quantize_lstm(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """DynamicQuantizeLSTM(X, W, R, B, sequence_lens, initial_h, initial_c, P, W_scale, W_zp, R_scale, R_zp): the
    LSTM of onnx_ops with int8 weights stored transposed, W (directions, input, 4*hidden) and R (directions,
    hidden, 4*hidden); each step's input quantized (MLAS u8s8 products)."""
    x, w, r = _pick(ins, 0, 1, 2)
    if w is None or r is None or w.ndim != 3 or r.ndim != 3:
        raise ValueError("DynamicQuantizeLSTM without W, R shapes")
    as_onnx = [x, TensorMeta((w.shape[0], w.shape[2], w.shape[1]), w.dtype),
               TensorMeta((r.shape[0], r.shape[2], r.shape[1]), r.dtype)]
    cost, name = base._HANDLERS["LSTM"](as_onnx, outs, attrs)
    return _fused((cost, name), ins, outs)


def _matmul_nbits(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """MatMulNBits(A, B packed (N, k_blocks, blob), scales, zero_points, g_idx, bias), attributes K, N, bits,
    block_size: A (..., K) times the dequantized (K, N) weight; the dequantisation 2 FLOPs per weight element."""
    a = ins[0]
    if a is None or not outs:
        raise ValueError("MatMulNBits without shapes")
    k = int(attrs.get("K") or a.shape[-1])
    n = int(attrs.get("N") or outs[0].shape[-1])
    rows = a.numel // a.shape[-1] if a.shape[-1] else 0
    flops = 2 * rows * k * n + DEQUANTIZE_FLOPS * k * n
    bias = ins[5] if len(ins) > 5 and ins[5] is not None else None
    if bias is not None:
        flops += outs[0].numel
    return (OpCost(float(flops), float(nbytes(base._present(ins)) + nbytes(outs)), True),
            "aten::matmul (int4 weight dequantized)")


def _gather_block_quantized(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """GatherBlockQuantized(data packed, indices, scales, zero_points): rows of a block-quantized table gathered
    and dequantized (2 FLOPs an output element). Bytes: the indices, the gathered share of the packed table and of
    its scales and zero points (rows gathered over the table's rows), the output written."""
    data, indices = ins[0], ins[1] if len(ins) > 1 else None
    if data is None or indices is None or not outs:
        raise ValueError("GatherBlockQuantized without shapes")
    axis = int(attrs.get("gather_axis", 0)) % data.ndim
    share = min(1.0, indices.numel / max(1, data.shape[axis]))
    tables = [m for m in ins[2:4] if m is not None] + [data]
    reads = indices.nbytes + share * nbytes(tables)
    return (OpCost(float(DEQUANTIZE_FLOPS * outs[0].numel), float(reads + nbytes(outs)), True),
            "aten::embedding (block-quantized)")


QUANTIZED_HANDLERS = {
    "QuantizeLinear": _per_element(QUANTIZE_FLOPS, "quantize_per_tensor"),
    "DequantizeLinear": _per_element(DEQUANTIZE_FLOPS, "dequantize"),
    "DynamicQuantizeLinear": _dynamic_quantize,
    "QLinearConv": _qlinear_conv, "ConvInteger": _conv_integer,
    "QLinearMatMul": _matmul_of(0, 3), "MatMulInteger": _matmul_of(0, 1), "QOrderedMatMul": _matmul_of(0, 2),
    "DynamicQuantizeMatMul": _dynamic_quantize_matmul, "MatMulIntegerToFloat": _matmul_integer_to_float,
    "QGemm": _qgemm, "QLinearAdd": _qlinear_binary("add"), "QLinearMul": _qlinear_binary("mul"),
    "QLinearSigmoid": _qlinear_unary("sigmoid"), "QLinearLeakyRelu": _qlinear_unary("leaky_relu"),
    "QLinearGlobalAveragePool": _qlinear_pool("global_avg"), "QLinearAveragePool": _qlinear_pool("avg"),
    "NhwcMaxPool": _qlinear_pool("max", nhwc=True), "QLinearSoftmax": _qlinear_softmax,
    "QLinearConcat": _qlinear_concat, "QLinearReduceMean": _qlinear_reduce_mean,
    "DynamicQuantizeLSTM": _dynamic_quantize_lstm, "QAttention": _qattention,
    "QEmbedLayerNormalization": _qembed_layer_norm, "MatMulNBits": _matmul_nbits,
    "GatherBlockQuantized": _gather_block_quantized,
}
