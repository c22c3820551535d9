"""Quantized ops (torch.ao.quantization): the quantized:: linear and convolution kernels, static (int8 in and
out) and dynamic (float in and out, int8 or float16 weights), the quantized element-wise ops, quantize /
dequantize, and the dynamically quantized recurrent stacks (aten::quantized_lstm / quantized_gru).

A quantized linear or convolution takes its weight prepacked (a LinearPackedParamsBase / Conv*dPackedParamsBase
object, not a tensor): a live recording reads it as a PackedWeights (count/meta.py; counting.to_meta unpacks it),
a trace file records nothing of it. There a linear is counted from its output (which the trace pipeline reads
from the allocation its children make, analyze/quantized_outputs.py): its weight (out, in) int8 (float16 for the
*_fp16 ops), a float32 bias assumed; a convolution, whose output does not give its kernel size, stays unmodelled.

FLOPs (FlopCounterMode counts none of these): the products as matmul.py and conv.py count them (2 per
multiply-add, int8 or not); the element-wise work around them (the dynamic ops' input quantization, the static
ops' output requantization, a fused relu, the bias) is not counted, as matmul.py does not count a bias: a few
FLOPs per element beside 2 * K per output. Quantized element-wise ops as elementwise.py counts their float
forms (add, mul, relu 1; hardswish 3; sigmoid 4); quantize 4 per element (QUANTIZE_FLOPS: scale, round, add the
zero point, clamp), dequantize 2 (DEQUANTIZE_FLOPS: subtract the zero point, scale), the ONNX nodes' convention
too (onnx_quant.py). quantized_lstm / quantized_gru as rnn.py counts an LSTM / GRU stack, the
weights' shapes from the input, state and layer count.
Bytes: the registry's convention; prepacked weights at their stored size (int8, or float16 for the *_fp16
ops), the bias float32.
"""

from __future__ import annotations

from math import prod

from roofline.count.conv import conv_flop_count, conv_output_shape
from roofline.count.meta import PackedWeights, TensorMeta
from roofline.count.registry import Call, OpCost, flatten_metas, nbytes, register, unmodeled
from roofline.count.rnn import GRU, LSTM, _tokens, rnn_forward_flops, stack_weights

# Per element, for the torch ops here and the ONNX nodes of onnx_quant.py alike. Quantize is
# clamp(round(x / scale) + zero_point): each of the four steps one FLOP (a clamp to [qmin, qmax] counted as one
# saturation, as the hardware does it); dequantize is (q - zero_point) * scale; a dynamic quantization first finds
# the range with a min/max pass over its input.
QUANTIZE_FLOPS = 4
DEQUANTIZE_FLOPS = 2
MINMAX_FLOPS = 2


CONV_NOT_RECORDED = ("the prepacked weight (kernel size, stride, padding, groups) was not recorded: a trace "
                     "records none, and the output allocation gives only the output channels")


def _stored(weight: TensorMeta, name: str) -> TensorMeta:
    """The weight as the kernel reads it: the *_fp16 ops store it as float16 (unpack() returns it as float32)."""
    return TensorMeta(weight.shape, "float16") if name.endswith("_fp16") else weight


LINEARS = ("quantized::linear", "quantized::linear_relu", "quantized::linear_dynamic",
            "quantized::linear_relu_dynamic", "quantized::linear_dynamic_fp16", "quantized::linear_relu_dynamic_fp16",
            "quantized::linear_leaky_relu", "quantized::linear_tanh")


@register(*LINEARS)
def quantized_linear(call: Call) -> OpCost:
    """(X (..., in), W_prepack, ...): 2 * rows * in * out, as aten::linear."""
    x = call.tensor(0, "X")
    packed, note = call.arg(1), ""
    if not isinstance(packed, PackedWeights):
        if not call.outputs or call.outputs[0].ndim == 0:
            return unmodeled("the prepacked weight was not recorded (a trace records none), nor an output "
                             "allocation that gives its out features", keep_whole=True)
        packed = PackedWeights(TensorMeta((call.outputs[0].shape[-1], x.shape[-1]), "qint8"),
                               TensorMeta((call.outputs[0].shape[-1],), "float32"))
        note = "prepacked weight not recorded: (out, in) int8 from the output's size, a float32 bias assumed"
    weight = _stored(packed.weight, call.name)
    out_features = weight.shape[0]
    rows = prod(x.shape[:-1])
    out_dtype = "quint8" if "dynamic" not in call.name else x.dtype
    outputs = call.outputs if call.outputs is not None else [TensorMeta(x.shape[:-1] + (out_features,), out_dtype)]
    return OpCost(float(2 * rows * x.shape[-1] * out_features), float(nbytes([x, weight, packed.bias])
                                                                        + nbytes(outputs)), True, note=note)


_CONVS = tuple(f"quantized::{kind}{suffix}" for kind in ("conv1d", "conv2d", "conv3d")
               for suffix in ("", "_relu", "_dynamic", "_add", "_add_relu")) + tuple(
    f"quantized::conv_transpose{d}d{suffix}" for d in (1, 2, 3) for suffix in ("", "_dynamic"))


@register(*_CONVS)
def quantized_conv(call: Call) -> OpCost:
    """(qx, packed_weight, ...) -> (N, C_out, ...): conv.py's count with the packed weight's geometry; the
    *_add forms read the added tensor (argument 1 after qx) too."""
    x = call.tensor(0, "qx")
    packed_index = 2 if call.name.endswith(("_add", "_add_relu")) else 1
    packed = call.arg(packed_index)
    if not isinstance(packed, PackedWeights):  # kept whole: its children (allocations, scale reads) count nothing
        return unmodeled(CONV_NOT_RECORDED, keep_whole=True)
    added = call.maybe_tensor(1) if packed_index == 2 else None
    if call.outputs is not None:
        outputs, out_shape = call.outputs, call.outputs[0].shape
    else:
        out_shape = conv_output_shape(x, packed.weight, list(packed.stride), list(packed.padding),
                                      list(packed.dilation), packed.transposed, list(packed.output_padding),
                                      packed.groups)
        outputs = [TensorMeta(out_shape, x.dtype)]
    flops = conv_flop_count(x.shape, packed.weight.shape, out_shape, packed.transposed)
    return OpCost(float(flops), float(nbytes([x, added, packed.weight, packed.bias]) + nbytes(outputs)), True)


_ELEMENTWISE = {"add": 1, "add_relu": 2, "mul": 1, "mul_relu": 2, "add_scalar": 1, "add_scalar_relu": 2,
                "mul_scalar": 1, "mul_scalar_relu": 2, "add_out": 1, "relu6": 1, "leaky_relu": 1,
                "hardswish": 3, "sigmoid": 4, "hardtanh": 1, "celu": 5, "elu": 5, "gelu": 8, "threshold": 1,
                "prelu": 1, "clamp": 1}


def _quantized_elementwise(flops_per_element: int):
    def formula(call: Call) -> OpCost:
        tensors = call.input_metas()
        outputs = call.outputs if call.outputs is not None else [max(tensors, key=lambda m: m.numel)]
        elements = max((m.numel for m in outputs), default=0)
        return OpCost(float(flops_per_element * elements), float(nbytes(tensors) + nbytes(outputs)), True)

    return formula


for _base, _flops in _ELEMENTWISE.items():
    register(f"quantized::{_base}")(_quantized_elementwise(_flops))


@register("quantized::cat", "quantized::cat_relu")
def quantized_cat(call: Call) -> OpCost:
    """(qx list, dim, scale, zero_point): each input requantized into the output: 1 FLOP per element (0 when the
    scales agree; the relu form 1 more)."""
    inputs = flatten_metas(call.arg(0, "qx"))
    elements = sum(m.numel for m in inputs)
    written = nbytes(call.outputs) if call.outputs is not None else nbytes(inputs)
    flops = elements * (2 if call.name.endswith("_relu") else 1)
    return OpCost(float(flops), float(nbytes(inputs) + written), True)


@register("quantized::batch_norm1d", "quantized::batch_norm2d", "quantized::batch_norm3d",
          "quantized::batch_norm1d_relu", "quantized::batch_norm2d_relu", "quantized::batch_norm3d_relu",
          "quantized::batch_norm", "quantized::layer_norm", "quantized::group_norm", "quantized::instance_norm")
def quantized_norm(call: Call) -> OpCost:
    """An affine normalisation of an int8 tensor: 2 FLOPs per element (scale and shift, inference statistics;
    layer/group/instance norm compute theirs: 4 more per element, as norm.py's mean and variance passes)."""
    x = call.tensor(0, "qx")
    per_element = 2 if "batch_norm" in call.name else 6
    if call.name.endswith("_relu"):
        per_element += 1
    params = [m for m in call.input_metas() if m is not x]
    written = nbytes(call.outputs) if call.outputs is not None else x.nbytes
    return OpCost(float(per_element * x.numel), float(x.nbytes + nbytes(params) + written), True)


@register("aten::quantize_per_tensor", "aten::quantize_per_channel", "aten::quantize_per_tensor_dynamic")
def quantize(call: Call) -> OpCost:
    """(self, scale(s), zero_point(s), [axis,] dtype): QUANTIZE_FLOPS per element (the dynamic form finds the scale
    first: a min/max pass, MINMAX_FLOPS more); the output 1 byte per element (qint32: 4)."""
    x = call.tensor(0, "self")
    per_element = QUANTIZE_FLOPS + (MINMAX_FLOPS if call.name.endswith("_dynamic") else 0)
    params = [m for m in flatten_metas(call.args[1:]) if m is not x]
    written = nbytes(call.outputs) if call.outputs is not None else x.numel
    return OpCost(float(per_element * x.numel), float(x.nbytes + nbytes(params) + written), True)


@register("aten::dequantize")
def dequantize(call: Call) -> OpCost:
    """(self) or (tensors list): DEQUANTIZE_FLOPS per element; float32 written."""
    inputs = flatten_metas(call.arg(0, "self"))
    elements = sum(m.numel for m in inputs)
    written = nbytes(call.outputs) if call.outputs is not None else 4 * elements
    return OpCost(float(DEQUANTIZE_FLOPS * elements), float(nbytes(inputs) + written), True)


@register("aten::quantized_lstm", "aten::quantized_gru")
def quantized_rnn(call: Call) -> OpCost:
    """(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first, [dtype,
    use_dynamic]): rnn.py's stack count; the packed cell weights are not tensors, so their shapes come from the
    input and state sizes (weights int8, or float16 with dtype=float16)."""
    x = call.tensor(0, "input")
    states = flatten_metas(call.arg(1, "hx"))
    if not states:
        raise ValueError("the RNN's state was not recorded")
    mode = LSTM if call.name.endswith("lstm") else GRU
    hidden, layers = states[0].shape[-1], int(call.arg(4, "num_layers", 1))
    directions = 2 if call.arg(7, "bidirectional") else 1
    weights = stack_weights(x.shape[-1], hidden, 0, layers, directions, mode)
    itemsize = 2 if str(call.arg(9, "dtype", "")).endswith(("float16", "5")) else 1
    weight_bytes = sum(w.numel for w in weights) * itemsize
    written = nbytes(call.outputs) if call.outputs is not None else \
        _tokens(x) * hidden * directions * x.itemsize + nbytes(states)
    return OpCost(rnn_forward_flops(_tokens(x), weights, mode),
                  float(x.nbytes + nbytes(states) + weight_bytes + written), True)
