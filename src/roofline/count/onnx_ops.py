"""ONNX nodes counted with the aten formulas: each ONNX op type (and the fused ops ONNX Runtime creates at its
higher optimisation levels) is mapped to the aten op(s) that do the same work, so one set of conventions serves
PyTorch runs and ONNX Runtime profiles alike.

    count_onnx_node("Conv", [x, w, b], [y], {"group": 1}) -> (OpCost, "aten::convolution")

Inputs and outputs are TensorMeta (shapes as the profile or ONNX shape inference gives them); ``None`` for an
omitted optional input. Attributes are optional: where a formula needs one that a profile does not carry (Gemm's
transA/transB, Conv's groups), it is inferred from the shapes. Conventions on top of the aten formulas':
- Fused nodes (FusedConv, nchwc Conv with activation or Sum input, FusedGemm, FusedMatMul, SkipLayerNormalization,
  BiasGelu, Attention, EmbedLayerNormalization) are the sum of their parts' FLOPs; their bytes are the fused
  node's own inputs read once and outputs written once (the parts' intermediates never reach memory).
- Reshape, Flatten, Squeeze, Unsqueeze, Identity, Shape, Size are views: no FLOPs, no bytes (ORT aliases the
  buffer). Transpose, Slice, Split, Concat, Expand, Tile, Pad, Gather, Cast and the layout reorders
  (ReorderInput/ReorderOutput of the NCHWc transformer) and device copies (MemcpyToHost/FromHost) are copies.
- Attention-like nodes count their projections as aten::addmm and the attention core as
  aten::scaled_dot_product_attention (its FLOPs do not depend on the head count, which profiles do not record).
- The NCHWc transformer (CPU, level all) pads channel counts to its block size (8 or 16): its nodes' shapes, and so
  their FLOPs and bytes, include the padding ORT computes (benchmarks/results/onnx_zoo_cpu.md: MobileNetV3 models'
  conv FLOPs 5-12% above level disable's).
- Recurrent (LSTM, GRU, RNN), detection (NonMaxSuppression: a lower bound; RoiAlign) and LLM contrib ops
  (GroupQueryAttention, RotaryEmbedding) use count/rnn.py's and the attention formulas; quantized ops are in
  count/onnx_quant.py. If/Loop/Scan stay unmodelled: their subgraphs' nodes are profiled on their own.
Anything else is unmodelled (``modeled=False``), never zero.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from roofline.count.counting import count_op
from roofline.count.meta import TensorMeta
from roofline.count.registry import OpCost, nbytes, unmodeled, zero_cost
from roofline.count.rnn import GRU, LSTM, RNN_RELU, RNN_TANH, rnn_forward_flops
from roofline.count.vision_ops import ADAPTIVE_SAMPLES, NMS_NOTE, SAMPLE_FLOPS, nms_flops

# ONNX's type names (as ORT's profile and TensorProto spell them) -> torch's.
ONNX_DTYPES = {
    "float": "float32", "float32": "float32", "double": "float64", "float64": "float64", "float16": "float16",
    "bfloat16": "bfloat16", "int64": "int64", "int32": "int32", "int16": "int16", "int8": "int8",
    "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64", "bool": "bool",
    "float8e4m3fn": "float8_e4m3fn", "float8e5m2": "float8_e5m2", "complex64": "complex64",
    "complex128": "complex128",
}


def onnx_dtype(name: str) -> str:
    text = str(name).strip().lower()
    if text.startswith("tensor(") and text.endswith(")"):
        text = text[7:-1]
    return ONNX_DTYPES.get(text, text)


ELEMENTWISE = {
    "Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Relu": "relu", "LeakyRelu": "leaky_relu",
    "Sigmoid": "sigmoid", "Tanh": "tanh", "Erf": "erf", "Exp": "exp", "Log": "log", "Sqrt": "sqrt",
    "Reciprocal": "reciprocal", "Neg": "neg", "Abs": "abs", "Pow": "pow", "Clip": "clamp", "Where": "where",
    "Equal": "eq", "Less": "lt", "LessOrEqual": "le", "Greater": "gt", "GreaterOrEqual": "ge",
    "Not": "logical_not", "And": "logical_and", "Or": "logical_or", "Xor": "logical_xor", "Floor": "floor",
    "Ceil": "ceil", "Round": "round", "Sign": "sign", "Max": "maximum", "Min": "minimum", "Mod": "remainder",
    "Elu": "elu", "Selu": "selu", "Celu": "celu", "PRelu": "prelu", "HardSigmoid": "hardsigmoid",
    "HardSwish": "hardswish", "Softplus": "softplus", "Sin": "sin", "Cos": "cos", "Gelu": "gelu",
    "FastGelu": "gelu", "Mish": "mish", "ThresholdedRelu": "threshold", "IsNaN": "isnan", "IsInf": "isinf",
    "QuickGelu": "silu",  # x * sigmoid(a x): silu's 5 FLOPs per element
}
VIEWS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Shape", "Size", "Constant",
                   "Dropout"})
COPIES = frozenset({"Transpose", "Slice", "Split", "Expand", "Tile", "Pad", "ReorderInput", "ReorderOutput",
                    "MemcpyToHost", "MemcpyFromHost", "SpaceToDepth", "DepthToSpace", "Cast", "CastLike"})
CONTROL_FLOW = frozenset({"If", "Loop", "Scan"})
LAYOUT = frozenset({"Transpose", "ReorderInput", "ReorderOutput"})
DEVICE_COPIES = frozenset({"MemcpyToHost", "MemcpyFromHost"})
CASTS = frozenset({"Cast", "CastLike"})
NORMS = frozenset({"BatchNormalization", "LayerNormalization", "SimplifiedLayerNormalization",
                   "SkipLayerNormalization", "SkipSimplifiedLayerNormalization", "InstanceNormalization",
                   "GroupNormalization", "RMSNormalization"})
_ACTIVATIONS = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "LeakyRelu": "leaky_relu", "Clip": "clamp",
                "HardSigmoid": "hardsigmoid", "HardSwish": "hardswish", "Gelu": "gelu", "FastGelu": "gelu",
                "Silu": "silu"}
_REDUCTIONS = {"ReduceMean": "mean", "ReduceSum": "sum", "ReduceMax": "amax", "ReduceMin": "amin",
               "ReduceProd": "prod", "ArgMax": "argmax", "ArgMin": "argmin", "ReduceL2": "norm",
               "ReduceLogSumExp": "logsumexp"}

Metas = Sequence[TensorMeta | None]


def count_onnx_node(op_type: str, inputs: Metas, outputs: Metas, attrs: Mapping[str, Any] | None = None,
                    domain: str = "") -> tuple[OpCost, str]:
    """FLOPs and minimum bytes of one ONNX node, and the aten op(s) that counted it ("" when unmodelled)."""
    attrs = attrs or {}
    ins = list(inputs)
    outs = [m for m in outputs if m is not None]
    handler = _HANDLERS.get(op_type) or _quantized_handlers().get(op_type)
    try:
        if handler is not None:
            return handler(ins, outs, attrs)
        if op_type in ELEMENTWISE:
            return _elementwise(ELEMENTWISE[op_type], ins, outs)
        if op_type in _REDUCTIONS:
            return _reduction(_REDUCTIONS[op_type], ins, outs, attrs)
    except _NotCounted as exc:
        return unmodeled(f"{op_type}: {exc}"), ""
    except (ValueError, TypeError, IndexError, KeyError, ZeroDivisionError) as exc:
        return unmodeled(f"{op_type}: could not count ({type(exc).__name__}: {exc})"[:300]), ""
    where = f" ({domain})" if domain else ""
    return unmodeled(f"no formula for ONNX op {op_type}{where}"), ""


def _present(metas: Metas) -> list[TensorMeta]:
    return [m for m in metas if m is not None]


def _combine(parts: list[tuple[OpCost, str]], reads: Metas, writes: Metas, note: str = "") -> tuple[OpCost, str]:
    """A fused node: its parts' FLOPs, its own inputs read once and outputs written once."""
    missing = [p for p, _ in parts if not p.modeled]
    if missing:
        return unmodeled(missing[0].note), ""
    flops = sum(p.flops for p, _ in parts)
    cost = OpCost(float(flops), float(nbytes(_present(reads)) + nbytes(_present(writes))), True, note=note)
    return cost, " + ".join(name for _, name in parts)


def _aten(name: str, args: Sequence[Any], outs: Metas | None = None) -> tuple[OpCost, str]:
    return count_op(f"aten::{name}", list(args), None, list(outs) if outs else None), f"aten::{name}"


def _elementwise(base: str, ins: Metas, outs: Metas) -> tuple[OpCost, str]:
    return _aten(base, _present(ins), outs)


def _text(value: Any) -> str:
    """A string attribute as ORT's profile (str) or onnx's protobuf (bytes) gives it."""
    return value.decode() if isinstance(value, bytes) else str(value)


def _activation_part(attrs: Mapping[str, Any], out: TensorMeta) -> list[tuple[OpCost, str]]:
    act = attrs.get("activation")
    if isinstance(act, bytes):
        act = act.decode()
    if not act:
        return []
    base = _ACTIVATIONS.get(str(act))
    if base is None:
        return [(unmodeled(f"fused activation {act} has no formula"), "")]
    return [_aten(base, [out], [out])]


def _conv(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """Conv (plain, FusedConv, the NCHWc transformer's Conv): inputs X, W, B, and for nchwc/FusedConv a Sum
    (residual) input added before the activation."""
    x, w = ins[0], ins[1]
    if x is None or w is None:
        raise ValueError("Conv without input or weight shapes")
    bias = ins[2] if len(ins) > 2 and ins[2] is not None and ins[2].ndim == 1 else None
    extra = [m for m in ins[2:] if m is not None and m is not bias and m.ndim == x.ndim]
    out = outs[0] if outs else None
    groups = int(attrs.get("group") or 0) or max(1, x.shape[1] // max(1, w.shape[1]))
    conv = _aten("convolution", [x, w, bias, attrs.get("strides", 1), attrs.get("pads", [0])[: x.ndim - 2] or 0,
                                 attrs.get("dilations", 1), False, None, groups], [out] if out else None)
    parts = [conv]
    if out is None:
        return conv
    for residual in extra:
        parts.append(_aten("add", [out, residual], [out]))
    parts += _activation_part(attrs, out)
    if len(parts) == 1:
        return conv
    return _combine(parts, ins, [out], note="fused: " + " + ".join(n for _, n in parts))


def _conv_transpose(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    x, w = ins[0], ins[1]
    bias = ins[2] if len(ins) > 2 else None
    groups = int(attrs.get("group") or 1)
    return _aten("convolution", [x, w, bias, attrs.get("strides", 1), 0, attrs.get("dilations", 1), True,
                                 attrs.get("output_padding", 0), groups], outs or None)


def _gemm(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """Gemm / FusedGemm: Y = alpha * op(A) @ op(B) + beta * C. transA/transB from the attributes, else from the
    shapes: A's dimension equal to Y's rows is M, B's equal to Y's columns is N."""
    a, b = ins[0], ins[1] if len(ins) > 1 else None
    c = ins[2] if len(ins) > 2 else None
    out = outs[0] if outs else None
    if b is not None and b.ndim == 1 and c is None:
        b, c = None, b
    if b is None and a is not None and a.ndim == 2 and out is not None:
        b = _prepacked_weight(a, out)
        attrs = {k: v for k, v in attrs.items() if k != "transB"}
    if a is None or b is None or a.ndim != 2 or b.ndim != 2:
        raise ValueError("Gemm needs two 2-D operands")
    if "transA" in attrs or "transB" in attrs or out is None:
        ta, tb = bool(attrs.get("transA", 0)), bool(attrs.get("transB", 0))
    else:
        ta = a.shape[0] != out.shape[0] and a.shape[1] == out.shape[0]
        tb = b.shape[1] != out.shape[1] and b.shape[0] == out.shape[1]
    a_ = TensorMeta(a.shape[::-1], a.dtype) if ta else a
    b_ = TensorMeta(b.shape[::-1], b.dtype) if tb else b
    gemm = _aten("addmm" if c is not None else "mm", ([c, a_, b_] if c is not None else [a_, b_]),
                 [out] if out else None)
    act = _activation_part(attrs, out) if out is not None else []
    if not act:
        return gemm
    return _combine([gemm] + act, ins, [out])


def _prepacked_weight(a: TensorMeta, out: TensorMeta) -> TensorMeta:
    """The constant (K, N) operand ORT prepacked at session start, which its profile then leaves out of the
    node's inputs: its shape follows from A's last dimension and the output's."""
    return TensorMeta((a.shape[-1], out.shape[-1]), a.dtype)


def _matmul(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """MatMul / FusedMatMul (transA/transB/transBatch attributes of the contrib op swap the last two dims)."""
    a, b = ins[0], ins[1] if len(ins) > 1 else None
    if b is None and a is not None and outs:
        b = _prepacked_weight(a, outs[0])
        ins = [a, b]
        attrs = {k: v for k, v in attrs.items() if k != "transB"}
    if a is None or b is None:
        raise ValueError("MatMul without operand shapes")
    if attrs.get("transA") and a.ndim >= 2:
        a = TensorMeta(a.shape[:-2] + a.shape[-2:][::-1], a.dtype)
    if attrs.get("transB") and b.ndim >= 2:
        b = TensorMeta(b.shape[:-2] + b.shape[-2:][::-1], b.dtype)
    if not attrs and outs and a.ndim >= 2 and b.ndim >= 2 and a.shape[-1] != b.shape[-2]:
        if b.shape[-1] == a.shape[-1]:  # a FusedMatMul with transB the profile does not show
            b = TensorMeta(b.shape[:-2] + b.shape[-2:][::-1], b.dtype)
    cost, name = _aten("matmul", [a, b], outs or None)
    if cost.modeled and (a is not ins[0] or b is not ins[1]):
        cost.bytes = float(nbytes(_present(ins[:2])) + nbytes(outs))
    return cost, name


def _batch_norm(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    x, scale, bias, mean, var = (list(ins) + [None] * 5)[:5]
    training = bool(attrs.get("training_mode", 0))
    return _aten("native_batch_norm", [x, scale, bias, mean, var, training, 0.1, attrs.get("epsilon", 1e-5)],
                 outs[:1] or None)


def _layer_norm(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """LayerNormalization(X, Scale, B); outputs Y (and optional Mean, InvStdDev: written when present)."""
    x, scale = ins[0], ins[1] if len(ins) > 1 else None
    bias = ins[2] if len(ins) > 2 else None
    if x is None:
        raise ValueError("LayerNormalization without an input shape")
    axis = int(attrs.get("axis", -1))
    axes = (x.ndim - axis) if axis >= 0 else -axis
    if scale is not None and "axis" not in attrs:
        axes = scale.ndim
    normalized = list(x.shape[x.ndim - axes:])
    return _aten("native_layer_norm", [x, normalized, scale, bias, attrs.get("epsilon", 1e-5)], outs or None)


def _rms_norm(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    x, scale = ins[0], ins[1] if len(ins) > 1 else None
    if x is None:
        raise ValueError("SimplifiedLayerNormalization without an input shape")
    normalized = list(scale.shape) if scale is not None else [x.shape[-1]]
    return _aten("_fused_rms_norm", [x, normalized, scale, attrs.get("epsilon", 1e-5)], outs[:1] or None)


def _skip_layer_norm(ins: Metas, outs: Metas, attrs: Mapping[str, Any], rms: bool = False) -> tuple[OpCost, str]:
    """SkipLayerNormalization(input, skip, gamma, beta, bias): LayerNorm(input + skip + bias)."""
    x, skip = ins[0], ins[1]
    gamma = ins[2] if len(ins) > 2 else None
    beta = None if rms else (ins[3] if len(ins) > 3 else None)
    bias = ins[4 if not rms else 3] if len(ins) > (4 if not rms else 3) else None
    if x is None or skip is None:
        raise ValueError("SkipLayerNormalization without input shapes")
    parts = [_aten("add", [x, skip], [x])]
    if bias is not None:
        parts.append(_aten("add", [x, bias], [x]))
    if rms:
        parts.append(_aten("_fused_rms_norm", [x, list(gamma.shape) if gamma else [x.shape[-1]], gamma, 1e-5], [x]))
    else:
        parts.append(_aten("native_layer_norm", [x, [x.shape[-1]], gamma, beta, 1e-5], None))
    return _combine(parts, ins, outs)


def _softmax(ins: Metas, outs: Metas, attrs: Mapping[str, Any], log: bool = False) -> tuple[OpCost, str]:
    x = ins[0]
    return _aten("_log_softmax" if log else "_softmax", [x, int(attrs.get("axis", -1)), False], outs or None)


def _bias_softmax(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """BiasSoftmax (com.microsoft, fused by ORT's CUDA provider from softmax(x + mask)): softmax(data + bias), the
    bias broadcast; its ``axis`` defaults to 1."""
    x = ins[0]
    if x is None:
        raise ValueError("BiasSoftmax without shapes")
    parts = [_aten("add", _present(ins[:2]), [x])] if len(_present(ins)) > 1 else []
    parts.append(_aten("_softmax", [x, int(attrs.get("axis", 1)), False], [x]))
    return _combine(parts, ins, outs)


def _pool(kind: str):
    def formula(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
        x = ins[0]
        if x is None:
            raise ValueError("pooling without an input shape")
        dims = x.ndim - 2
        if kind.startswith("global"):
            out_size = [1] * dims
            name = "_adaptive_avg_pool2d" if kind == "global_avg" and dims == 2 else None
            if name is None:
                return _reduction("mean" if kind == "global_avg" else "amax", [x], outs,
                                  {"axes": list(range(2, x.ndim))})
            return _aten(name, [x, out_size], outs[:1] or None)
        kernel = list(attrs.get("kernel_shape") or [])
        if not kernel and outs:
            raise ValueError("pooling kernel not known (no kernel_shape attribute)")
        pads = list(attrs.get("pads") or [0] * (2 * dims))[:dims]
        strides = list(attrs.get("strides") or [1] * dims)
        if kind == "max":
            name = {1: "max_pool1d_with_indices", 2: "max_pool2d_with_indices", 3: "max_pool3d_with_indices"}[dims]
            return _aten(name, [x, kernel, strides, pads, list(attrs.get("dilations") or [1] * dims),
                                bool(attrs.get("ceil_mode", 0))], outs[:1] or None)
        name = {1: "avg_pool1d", 2: "avg_pool2d", 3: "avg_pool3d"}[dims]
        return _aten(name, [x, kernel, strides, pads, bool(attrs.get("ceil_mode", 0))], outs[:1] or None)

    return formula


def _pool_by_shapes(kind: str):
    """A pooling node whose kernel is unknown (a profile without the model's attributes): FLOPs from the output
    size and the ratio of input to output spatial size (the window, for non-overlapping pools; stated in the note)."""
    exact = _pool(kind)

    def formula(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
        if attrs.get("kernel_shape") or kind.startswith("global"):
            return exact(ins, outs, attrs)
        x = ins[0]
        if x is None or not outs:
            raise ValueError("pooling without shapes")
        window = max(1, x.numel // max(1, outs[0].numel))
        cost = OpCost(float(window * outs[0].numel), float(x.nbytes + nbytes(outs)), True,
                      note="pooling window not recorded: input/output size ratio used as the window")
        return cost, f"aten::{'max' if kind == 'max' else 'avg'}_pool (by shapes)"

    return formula


def _reduction(base: str, ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    x = ins[0]
    if x is None:
        raise ValueError("reduction without an input shape")
    axes = attrs.get("axes")
    if axes is None and outs:
        axes = [i for i, (a, b) in enumerate(zip(x.shape, outs[0].shape)) if a != b] or list(range(x.ndim))
    keep = bool(attrs.get("keepdims", 1))
    return _aten(base, [x, list(axes) if axes is not None else None, keep], outs[:1] or None)


def _view(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    return zero_cost("a view: ORT aliases the buffer", view=True), "aten::view"


def _copy(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """A copy: what it reads (the outputs' worth of elements, at the input's dtype) and what it writes. A Cast
    reads the input at its own dtype; Slice/Gather-like copies read only what they keep."""
    src = ins[0]
    if src is None or not outs:
        raise ValueError("copy without shapes")
    written = nbytes(outs)
    read_elems = min(src.numel, sum(m.numel for m in outs)) if src.numel else 0
    if len(outs) == 1 and outs[0].numel > src.numel:  # Expand / Tile / Pad read the source once
        read_elems = src.numel
    return OpCost(0.0, float(read_elems * src.itemsize + written), True), "aten::_to_copy" if outs[0].dtype != src.dtype \
        else "aten::clone"


def _concat(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    return _aten("cat", [_present(ins), int(attrs.get("axis", 0))], outs or None)


def _gather(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """Gather of rows of a 2-D table by integer indices is an embedding lookup; other gathers read what they
    write (plus the indices)."""
    data, indices = ins[0], ins[1] if len(ins) > 1 else None
    if data is None or indices is None:
        raise ValueError("Gather without shapes")
    if data.ndim == 2 and int(attrs.get("axis", 0)) == 0 and indices.dtype.startswith(("int", "uint")):
        return _aten("embedding", [data, indices], outs or None)
    written = nbytes(outs) if outs else 0
    return OpCost(0.0, float(written + indices.nbytes + written), True), "aten::index_select"


def _gather_elements(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    data, indices = ins[0], ins[1] if len(ins) > 1 else None
    return _aten("gather", [data, int(attrs.get("axis", 0)), indices], outs or None)


def _attention(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """ORT's contrib Attention(input, weights, bias, mask_index, past, attention_bias): the packed QKV projection
    (aten::addmm) and the attention core (aten::scaled_dot_product_attention)."""
    x, weight = ins[0], ins[1]
    bias = ins[2] if len(ins) > 2 else None
    if x is not None and x.ndim == 3 and weight is not None and weight.ndim == 1:
        # ORT prepacked the weight and left it out of the profile: what follows the input is the bias
        bias, weight = weight, TensorMeta((x.shape[2], weight.shape[0]), x.dtype)
        ins = [x, weight, bias] + list(ins[2:])
    if x is None or weight is None or x.ndim != 3:
        raise ValueError("Attention needs (batch, seq, hidden) input and weight shapes")
    batch, seq, hidden = x.shape
    qkv_width = weight.shape[1]
    sizes = attrs.get("qkv_hidden_sizes") or [qkv_width // 3] * 3
    heads = int(attrs.get("num_heads") or 1)
    rows = TensorMeta((batch * seq, hidden), x.dtype)
    proj = _aten("addmm" if bias is not None else "mm",
                 ([bias, rows, weight] if bias is not None else [rows, weight]),
                 [TensorMeta((batch * seq, qkv_width), x.dtype)])
    q = TensorMeta((batch, heads, seq, sizes[0] // heads), x.dtype)
    k = TensorMeta((batch, heads, seq, sizes[1] // heads), x.dtype)
    v = TensorMeta((batch, heads, seq, sizes[2] // heads), x.dtype)
    core = _aten("scaled_dot_product_attention", [q, k, v], None)
    return _combine([proj, core], ins, outs)


def _multi_head_attention(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """MultiHeadAttention(query, key, value, ...): the attention core only (projections are separate nodes)."""
    q = ins[0]
    k = ins[1] if len(ins) > 1 and ins[1] is not None else q
    v = ins[2] if len(ins) > 2 and ins[2] is not None else k
    if q is None or q.ndim != 3:
        raise ValueError("MultiHeadAttention needs (batch, seq, hidden) query shapes")
    heads = int(attrs.get("num_heads") or 1)

    def bhsd(m: TensorMeta) -> TensorMeta:
        return TensorMeta((m.shape[0], heads, m.shape[1], m.shape[2] // heads), m.dtype)

    core = _aten("scaled_dot_product_attention", [bhsd(q), bhsd(k), bhsd(v)], None)
    return _combine([core], ins, outs)


def _bias_gelu(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    x = ins[0]
    parts = [_aten("add", _present(ins[:2]), [x])] if len(_present(ins)) > 1 else []
    parts.append(_aten("gelu", [x], [x]))
    return _combine(parts, ins, outs)


def _embed_layer_norm(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """EmbedLayerNormalization(input_ids, segment_ids, word_emb, pos_emb, seg_emb, gamma, beta, ...): three
    lookups, two adds and a layer norm."""
    ids = ins[0]
    tables = [ins[i] for i in (2, 3, 4) if len(ins) > i and ins[i] is not None]
    gamma = ins[5] if len(ins) > 5 else None
    beta = ins[6] if len(ins) > 6 else None
    if ids is None or not tables:
        raise ValueError("EmbedLayerNormalization without shapes")
    hidden = tables[0].shape[1]
    x = TensorMeta(tuple(ids.shape) + (hidden,), tables[0].dtype)
    parts = [_aten("embedding", [t, ids], None) for t in tables]
    parts += [_aten("add", [x, x], [x]) for _ in tables[1:]]
    parts.append(_aten("native_layer_norm", [x, [hidden], gamma, beta, 1e-5], None))
    out = outs[:1] or [x]
    return _combine(parts, [ids] + [ins[1] if len(ins) > 1 else None] + [gamma, beta], out)


def _constant_fill(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    return OpCost(0.0, float(nbytes(outs)), True), "aten::full"


def _rnn(mode_name: str):
    """ONNX's LSTM/GRU/RNN: one layer, one or two directions. X (seq, batch, input) (``layout`` 1: batch first;
    the token count is the same), W (directions, gates*hidden, input), R (directions, gates*hidden, hidden): the
    gate products and the pointwise cell of count/rnn.py for every token and direction. RNN's cell is tanh's
    unless ``activations`` says Relu."""

    def formula(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
        x, w, r = (list(ins) + [None] * 3)[:3]
        if x is None or w is None or r is None or w.ndim != 3 or r.ndim != 3:
            raise ValueError(f"{mode_name} without X, W, R shapes")
        mode = {"lstm": LSTM, "gru": GRU, "rnn": RNN_TANH}[mode_name]
        acts = [_text(a) for a in (attrs.get("activations") or [])]
        if mode == RNN_TANH and acts and acts[0].lower() == "relu":
            mode = RNN_RELU
        weights = []
        for d in range(w.shape[0]):
            weights += [TensorMeta(w.shape[1:], w.dtype), TensorMeta(r.shape[1:], r.dtype)]
        tokens = x.numel // x.shape[-1] if x.shape[-1] else 0
        flops = rnn_forward_flops(tokens, weights, mode)
        aten = {LSTM: "aten::lstm", GRU: "aten::gru", RNN_TANH: "aten::rnn_tanh", RNN_RELU: "aten::rnn_relu"}[mode]
        return OpCost(float(flops), float(nbytes(_present(ins)) + nbytes(outs)), True), aten

    return formula


_RESIZE_KINDS = {("nearest", 1): "upsample_nearest1d", ("nearest", 2): "upsample_nearest2d",
                 ("nearest", 3): "upsample_nearest3d", ("linear", 1): "upsample_linear1d",
                 ("linear", 2): "upsample_bilinear2d", ("linear", 3): "upsample_trilinear3d",
                 ("cubic", 2): "upsample_bicubic2d"}


def _resize(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """Resize / Upsample (``mode`` nearest, linear, cubic): the aten upsample of as many spatial dimensions as
    the resize changes (at least the trailing ones it keeps after batch and channels), its output as recorded."""
    x = ins[0]
    if x is None or not outs:
        raise ValueError("Resize without shapes")
    mode = _text(attrs.get("mode", "nearest")).lower()
    mode = {"bilinear": "linear", "trilinear": "linear", "bicubic": "cubic"}.get(mode, mode)  # Upsample's old names
    out = outs[0]
    spatial = max(1, min(3, x.ndim - 2)) if x.ndim > 2 else 1
    name = _RESIZE_KINDS.get((mode, spatial)) or _RESIZE_KINDS[("nearest", spatial)]
    return _aten(name, [x, list(out.shape[x.ndim - spatial:])], [out])


def _grid_sample(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    x, grid = ins[0], ins[1] if len(ins) > 1 else None
    mode = _text(attrs.get("mode", "bilinear")).lower()
    code = {"bilinear": 0, "linear": 0, "nearest": 1, "bicubic": 2, "cubic": 2}.get(mode, 0)
    return _aten("grid_sampler_2d" if x is not None and x.ndim == 4 else "grid_sampler_3d",
                 [x, grid, code, 0, bool(attrs.get("align_corners", 0))], outs or None)


def _instance_norm(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """InstanceNormalization(input, scale, B): a group norm with one group per channel (aten::native_group_norm's
    5 FLOPs an element, plus the affine's 2); its statistics stay in the kernel (only Y is an ONNX output)."""
    x = ins[0]
    if x is None or x.ndim < 2:
        raise ValueError("InstanceNormalization without an input shape")
    scale, bias = (list(ins) + [None, None])[1:3]
    cost, _ = _aten("native_group_norm", [x, scale, bias, x.shape[0], x.shape[1], x.numel // max(1, x.shape[0] *
                                          x.shape[1]), x.shape[1], attrs.get("epsilon", 1e-5)], None)
    return OpCost(cost.flops, float(nbytes(_present(ins)) + nbytes(outs)), True), "aten::native_group_norm"


def _group_norm(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """GroupNormalization (opset 18: X, scale, bias, ``num_groups``) and ORT's contrib GroupNorm (NHWC input,
    gamma, beta, ``groups``, optional fused Swish): aten::native_group_norm (plus silu when fused)."""
    x = ins[0]
    if x is None or x.ndim < 2:
        raise ValueError("GroupNormalization without an input shape")
    groups = int(attrs.get("num_groups") or attrs.get("groups") or 1)
    scale, bias = (list(ins) + [None, None])[1:3]
    norm = _aten("native_group_norm", [x, scale, bias, x.shape[0], x.shape[1], 1, groups, 1e-5], None)
    parts = [norm] + ([_aten("silu", [x], [x])] if int(attrs.get("activation", 0) or 0) == 1 else [])
    return _combine(parts, ins, outs)


def _einsum(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    equation = attrs.get("equation")
    if isinstance(equation, bytes):
        equation = equation.decode()
    cost, name = _aten("einsum", [equation, _present(ins)], outs or None)
    if cost.modeled:
        cost.bytes = float(nbytes(_present(ins)) + nbytes(outs))
    return cost, name


def _topk(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """TopK(X, K): k from the values output (K itself is a 1-element input whose value profiles do not hold)."""
    x = ins[0]
    if x is None or not outs:
        raise ValueError("TopK without shapes")
    axis = int(attrs.get("axis", -1)) % x.ndim
    return _aten("topk", [x, outs[0].shape[axis], axis], outs)


def _cumsum(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    return _aten("cumsum", [ins[0], 0], outs or None)


def _trilu(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    return _aten("triu" if int(attrs.get("upper", 1)) else "tril", [ins[0]], outs or None)


def _scatter_elements(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """ScatterElements(data, indices, updates): out of place, aten::scatter (scatter_reduce when ``reduction`` is
    add/mul/max/min: one FLOP per update)."""
    data, indices, updates = (list(ins) + [None] * 3)[:3]
    reduction = _text(attrs.get("reduction", "none"))
    name = "scatter" if reduction == "none" else "scatter_reduce"
    return _aten(name, [data, int(attrs.get("axis", 0)), indices, updates], outs or None)


def _scatter_nd(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """ScatterND(data, indices, updates): out of place, aten::index_put's bytes (data copied, the updates and
    indices read); one FLOP per updated element when ``reduction`` accumulates."""
    data, indices, updates = (list(ins) + [None] * 3)[:3]
    if data is None or indices is None or updates is None:
        raise ValueError("ScatterND without shapes")
    reduction = _text(attrs.get("reduction", "none"))
    flops = float(updates.numel) if reduction != "none" else 0.0
    return OpCost(flops, float(data.nbytes + indices.nbytes + updates.nbytes + nbytes(outs)), True), "aten::index_put"


def _nms(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """NonMaxSuppression(boxes (B, N, 4), scores (B, C, N), max_output_boxes_per_class, iou_threshold,
    score_threshold): torchvision::nms's upper bound (vision_ops.nms_flops) per batch and class, the score
    threshold counted when the node has one."""
    boxes, scores = ins[0], ins[1] if len(ins) > 1 else None
    if boxes is None or scores is None or scores.ndim != 3:
        raise ValueError("NonMaxSuppression without boxes/scores shapes")
    thresholded = len(ins) > 4 and ins[4] is not None
    flops = nms_flops(scores.shape[2], scores.shape[0] * scores.shape[1], thresholded)
    return (OpCost(flops, float(nbytes(_present(ins)) + nbytes(outs)), True, note=NMS_NOTE), "torchvision::nms")


def _roi_align(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """RoiAlign(X, rois, batch_indices) -> (R, C, oh, ow): each output element averages (or maxes) s x s bilinear
    samples, s = ``sampling_ratio`` (0, adaptive: taken as 2, torchvision's usual ceil(roi/out) for boxes about
    twice the output; said in the note); a bilinear sample is aten's 7 FLOPs (pooling.py), plus 1 to accumulate.
    Bytes: rois and indices read, the output written, and at most 4 input elements per sample gathered."""
    x, rois = ins[0], ins[1] if len(ins) > 1 else None
    if x is None or rois is None or not outs:
        raise ValueError("RoiAlign without shapes")
    ratio = int(attrs.get("sampling_ratio", 0) or 0)
    samples = ratio ** 2 if ratio else ADAPTIVE_SAMPLES
    out = outs[0]
    gathered = min(x.nbytes * rois.shape[0], out.numel * samples * 4 * x.itemsize)
    note = "sampling_ratio 0 (adaptive): 2x2 samples per output element assumed" if not ratio else ""
    cost = OpCost(float(out.numel * samples * SAMPLE_FLOPS), float(gathered + nbytes(_present(ins[1:])) + nbytes(outs)), True,
                  note=note)
    return cost, "torchvision::roi_align"


def _data_dependent(name: str):
    """NonZero / Compress / Unique: the output size depends on the data (the profile records it): aten's
    data-dependent count, one FLOP per input element, inputs read and outputs written."""

    def formula(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
        return _aten(name, _present(ins)[:1], outs)

    return formula


def _gather_nd(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """GatherND(data, indices): reads what it writes, plus the indices (as Gather)."""
    indices = ins[1] if len(ins) > 1 else None
    if indices is None or not outs:
        raise ValueError("GatherND without shapes")
    written = nbytes(outs)
    return OpCost(0.0, float(2 * written + indices.nbytes), True), "aten::index"


def _control_flow(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    raise _NotCounted("control flow (If/Loop/Scan): its time includes its subgraph's nodes, which ORT's profile "
                      "also lists on their own; not counted, so that their work is not counted twice")


class _NotCounted(Exception):
    """A node left unmodelled on purpose, with the reason."""


def _write_only(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """OneHot(indices, depth, values) / EyeLike / RandomNormalLike: the small inputs read, the output written."""
    return OpCost(0.0, float(nbytes(_present(ins)) + nbytes(outs)), True), "aten::one_hot"


def _fast_gelu(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """FastGelu(X, bias?): gelu (tanh form), the optional bias added first (fused)."""
    if len(_present(ins)) > 1:
        return _bias_gelu(ins, outs, attrs)
    return _aten("gelu", [ins[0]], outs)


def _bias_add(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """BiasAdd(X, bias, skip): X + bias + skip, two adds an element, fused."""
    x = ins[0]
    return _combine([_aten("add", [x, x], [x]), _aten("add", [x, x], [x])], ins, outs)


def _bias_split_gelu(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """BiasSplitGelu(X, bias): (X + bias) split in two halves along the last axis, left * gelu(right)."""
    x = ins[0]
    if x is None or not outs:
        raise ValueError("BiasSplitGelu without shapes")
    half = outs[0]
    return _combine([_aten("add", [x, x], [x]), _aten("gelu", [half], [half]), _aten("mul", [half, half], [half])],
                    ins, outs)


def _rotary(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """RotaryEmbedding(input, position_ids, cos_cache, sin_cache): x*cos + rotate(x)*sin, 3 FLOPs per rotated
    element (``rotary_embedding_dim`` of each head, all of it when 0). Bytes: the input and ids read, the cos/sin
    rows of one sequence's positions (the minimum: every batch row at the same positions; at most the caches),
    the output written."""
    x = ins[0]
    if x is None or not outs:
        raise ValueError("RotaryEmbedding without shapes")
    caches = [m for m in ins[2:4] if m is not None]
    seq = x.shape[1] if x.ndim == 3 else x.shape[2] if x.ndim == 4 else x.numel // x.shape[-1]
    rows = min(seq, caches[0].shape[0]) if caches and caches[0].ndim == 2 else 0
    cache_bytes = sum(min(c.nbytes, rows * c.shape[-1] * c.itemsize) for c in caches)
    rotated = x.numel
    dim = int(attrs.get("rotary_embedding_dim", 0) or 0)
    heads = int(attrs.get("num_heads", 0) or 0)
    if dim and heads and x.ndim == 3:
        rotated = x.numel // (x.shape[-1] // heads) * dim
    reads = x.nbytes + (ins[1].nbytes if len(ins) > 1 and ins[1] is not None else 0) + cache_bytes
    return OpCost(float(3 * rotated), float(reads + nbytes(outs)), True), "aten::mul + aten::add (rotary)"


def _group_query_attention(ins: Metas, outs: Metas, attrs: Mapping[str, Any]) -> tuple[OpCost, str]:
    """GroupQueryAttention(query, key, value, past_key, past_value, seqlens_k, total_sequence_length, cos_cache,
    sin_cache, ...): the attention core of ``num_heads`` query heads over the present length T (present_key's
    dimension 2, else the key's length plus the past's), as aten::scaled_dot_product_attention with the kv heads
    repeated to the query heads (its FLOPs count every query head); plus the rotary embedding when ``do_rotary``.
    Packed QKV (key absent): query's width is (num_heads + 2 kv_num_heads) head_dim."""
    q, k = ins[0], ins[1] if len(ins) > 1 else None
    if q is None or q.ndim != 3:
        raise ValueError("GroupQueryAttention needs a (batch, seq, hidden) query")
    heads = int(attrs.get("num_heads") or 1)
    kv_heads = int(attrs.get("kv_num_heads") or heads)
    batch, seq, width = q.shape
    head_dim = width // (heads + 2 * kv_heads) if k is None else width // heads
    past = ins[3] if len(ins) > 3 else None
    present = outs[1] if len(outs) > 1 and outs[1].ndim == 4 else None
    total = present.shape[2] if present is not None else seq + (past.shape[2] if past is not None and past.ndim == 4 else 0)
    qm = TensorMeta((batch, heads, seq, head_dim), q.dtype)
    kv = TensorMeta((batch, heads, total, head_dim), q.dtype)
    parts = [_aten("scaled_dot_product_attention", [qm, kv, kv], None)]
    if int(attrs.get("do_rotary", 0) or 0):
        rotated = batch * seq * (heads + kv_heads) * head_dim
        parts.append((OpCost(3.0 * rotated, 0.0, True), "rotary"))
    return _combine(parts, ins, outs)


_HANDLERS = {
    "Conv": _conv, "FusedConv": _conv, "NhwcConv": _conv, "NhwcFusedConv": _conv, "ConvTranspose": _conv_transpose,
    "Gemm": _gemm, "FusedGemm": _gemm, "MatMul": _matmul, "FusedMatMul": _matmul,
    "BatchNormalization": _batch_norm, "LayerNormalization": _layer_norm,
    "SimplifiedLayerNormalization": _rms_norm, "RMSNormalization": _rms_norm,
    "SkipLayerNormalization": _skip_layer_norm,
    "SkipSimplifiedLayerNormalization": lambda i, o, a: _skip_layer_norm(i, o, a, rms=True),
    "Softmax": _softmax, "BiasSoftmax": _bias_softmax, "LogSoftmax": lambda i, o, a: _softmax(i, o, a, log=True),
    "MaxPool": _pool_by_shapes("max"), "AveragePool": _pool_by_shapes("avg"),
    "GlobalAveragePool": _pool("global_avg"), "GlobalMaxPool": _pool("global_max"),
    "Concat": _concat, "Gather": _gather, "GatherElements": _gather_elements, "Attention": _attention, "MultiHeadAttention": _multi_head_attention,
    "BiasGelu": _bias_gelu, "EmbedLayerNormalization": _embed_layer_norm,
    "ConstantOfShape": _constant_fill, "Range": _constant_fill,
    "LSTM": _rnn("lstm"), "GRU": _rnn("gru"), "RNN": _rnn("rnn"), "Resize": _resize, "Upsample": _resize,
    "GridSample": _grid_sample, "InstanceNormalization": _instance_norm, "GroupNormalization": _group_norm,
    "GroupNorm": _group_norm, "Einsum": _einsum, "TopK": _topk, "CumSum": _cumsum, "Trilu": _trilu,
    "ScatterElements": _scatter_elements, "Scatter": _scatter_elements, "ScatterND": _scatter_nd,
    "NonMaxSuppression": _nms, "RoiAlign": _roi_align, "OneHot": _write_only, "EyeLike": _write_only,
    "FastGelu": _fast_gelu, "BiasAdd": _bias_add, "BiasSplitGelu": _bias_split_gelu, "RotaryEmbedding": _rotary,
    "GroupQueryAttention": _group_query_attention, "NonZero": _data_dependent("nonzero"),
    "Compress": _data_dependent("masked_select"), "Unique": _data_dependent("unique"), "GatherND": _gather_nd,
    **{name: _control_flow for name in CONTROL_FLOW},
    **{name: _view for name in VIEWS},
    **{name: _copy for name in COPIES},
}


def _quantized_handlers() -> Mapping[str, Any]:
    """count/onnx_quant.py's formulas (imported here, lazily: that module builds on this one's helpers)."""
    from roofline.count.onnx_quant import QUANTIZED_HANDLERS

    return QUANTIZED_HANDLERS


def modelled_op_types() -> frozenset[str]:
    """Every ONNX op type with a formula (fused contrib ops and quantized ops included)."""
    known = frozenset(_HANDLERS) | frozenset(ELEMENTWISE) | frozenset(_REDUCTIONS) | frozenset(_quantized_handlers())
    return known - CONTROL_FLOW

