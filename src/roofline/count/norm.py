"""Normalizations: layer_norm, rms_norm, batch_norm (every backend), group_norm; forward and backward.

FLOPs per element of the input:
- layer_norm / group_norm / batch_norm in training: 5 to normalize (sum for the mean, subtract, square,
  sum for the variance, then subtract-mean and multiply by rstd counted within) + 2 for the affine
  (multiply weight, add bias) when present: 7 with weight and bias, 5 without.
- batch_norm in eval (running statistics): 2 to normalize (subtract, multiply) + 2 affine = 4.
- rms_norm: 3 (square, sum, multiply by rstd) + 1 for the weight = 4.
- weight_norm (w = g * v / ||v||): 3 per element of v (square, sum, scale); backward 5 (the dot product of
  grad_w with v, 2, and the projection, 3).
- backward: grad_input 8 (layer/group/batch in training; rms 6; batch in eval 2), grad_weight 2
  (multiply by x_hat, accumulate), grad_bias 1 (accumulate), each only when its output_mask is set.
Bytes: input, weight, bias (and running stats) read once; the output written once, plus the per-row
statistics the op returns (layer_norm: mean and rstd, float32, one per normalized row; batch_norm in
training: per-channel save_mean/save_invstd; group_norm: (N, groups)). Backward reads grad_out, input,
the saved statistics and weight; writes the gradients asked for.
"""

from __future__ import annotations

from roofline.count.meta import TensorMeta
from roofline.count.registry import Call, OpCost, nbytes, register
from roofline.count.shapes import acc_dtype


def _norm_axes(normalized_shape: object) -> int:
    """How many trailing axes a layer norm normalises over (an int shape is one axis)."""
    return len(normalized_shape) if isinstance(normalized_shape, (list, tuple)) else 1


def _stats_shape(x: TensorMeta, axes: int) -> tuple[int, ...]:
    return tuple(x.shape[: x.ndim - axes]) + (1,) * axes


def _affine_flops(weight: TensorMeta | None, bias: TensorMeta | None) -> int:
    return (1 if weight is not None else 0) + (1 if bias is not None else 0)


def _writes(call: Call, fallback: list[TensorMeta]) -> int:
    return nbytes(call.outputs if call.outputs is not None else fallback)


@register("aten::native_layer_norm")
def native_layer_norm(call: Call) -> OpCost:
    """(input, normalized_shape, weight, bias, eps) -> (out, mean, rstd)."""
    x = call.tensor(0, "input")
    weight, bias = call.maybe_tensor(2, "weight"), call.maybe_tensor(3, "bias")
    axes = _norm_axes(call.arg(1, "normalized_shape"))
    stats = TensorMeta(_stats_shape(x, axes), acc_dtype(x.dtype))
    flops = (5 + _affine_flops(weight, bias)) * x.numel
    return OpCost(float(flops), float(nbytes([x, weight, bias]) + _writes(call, [x, stats, stats])), True)


@register("aten::layer_norm", "aten::group_norm", composite=True)
def composite_norm(call: Call) -> OpCost:
    """Composite (-> native_layer_norm / native_group_norm): its output only. Both take (input, shape or
    num_groups, weight, bias, eps, ...)."""
    x = call.tensor(0, "input")
    weight, bias = call.maybe_tensor(2, "weight"), call.maybe_tensor(3, "bias")
    flops = (5 + _affine_flops(weight, bias)) * x.numel
    return OpCost(float(flops), float(nbytes([x, weight, bias]) + _writes(call, [x])), True)


@register("aten::native_layer_norm_backward")
def native_layer_norm_backward(call: Call) -> OpCost:
    """(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask)."""
    grad_out, x = call.tensor(0, "grad_out"), call.tensor(1, "input")
    mean, rstd = call.maybe_tensor(3, "mean"), call.maybe_tensor(4, "rstd")
    weight, bias = call.maybe_tensor(5, "weight"), call.maybe_tensor(6, "bias")
    return _backward(call, grad_out, x, [mean, rstd, weight], weight, bias, call.arg(7, "output_mask"), 8)


def _backward(call: Call, grad_out: TensorMeta, x: TensorMeta, extra_reads: list[TensorMeta | None],
              weight: TensorMeta | None, bias: TensorMeta | None, mask: object, input_flops: int) -> OpCost:
    if not isinstance(mask, (list, tuple)) or len(mask) < 2:
        mask = [True, weight is not None, bias is not None]
    mask = list(mask) + [False] * (3 - len(mask))
    flops = 0
    writes: list[TensorMeta] = []
    if mask[0]:
        flops += input_flops * x.numel
        writes.append(x.with_shape(x.shape, grad_out.dtype))
    if mask[1] and weight is not None:
        flops += 2 * x.numel
        writes.append(weight)
    if mask[2] and (bias is not None or weight is not None):
        flops += x.numel
        writes.append(bias if bias is not None else weight)
    reads = nbytes([grad_out, x] + extra_reads)
    return OpCost(float(flops), float(reads + _writes(call, writes)), True)


@register("aten::_fused_rms_norm")
def fused_rms_norm(call: Call) -> OpCost:
    """(input, normalized_shape, weight, eps) -> (out, rstd)."""
    x, weight = call.tensor(0, "input"), call.maybe_tensor(2, "weight")
    axes = _norm_axes(call.arg(1, "normalized_shape"))
    rstd = TensorMeta(_stats_shape(x, axes), acc_dtype(x.dtype))
    flops = (3 + (1 if weight is not None else 0)) * x.numel
    return OpCost(float(flops), float(nbytes([x, weight]) + _writes(call, [x, rstd])), True)


@register("aten::rms_norm", composite=True)
def rms_norm(call: Call) -> OpCost:
    """Composite (-> _fused_rms_norm, or pow/mean/rsqrt/mul): its output only."""
    x, weight = call.tensor(0, "input"), call.maybe_tensor(2, "weight")
    flops = (3 + (1 if weight is not None else 0)) * x.numel
    return OpCost(float(flops), float(nbytes([x, weight]) + _writes(call, [x])), True)


@register("aten::_fused_rms_norm_backward")
def fused_rms_norm_backward(call: Call) -> OpCost:
    """(grad_out, input, normalized_shape, rstd, weight, output_mask) -> (grad_input, grad_weight)."""
    grad_out, x = call.tensor(0, "grad_out"), call.tensor(1, "input")
    rstd, weight = call.maybe_tensor(3, "rstd"), call.maybe_tensor(4, "weight")
    mask = call.arg(5, "output_mask")
    mask = list(mask)[:2] + [False] if isinstance(mask, (list, tuple)) else None
    return _backward(call, grad_out, x, [rstd, weight], weight, None, mask, 6)


# name -> (training arg index, or True/False when fixed by the op; weight, bias, running_mean, running_var at 1..4)
_BATCH_NORMS = {
    "aten::native_batch_norm": 5, "aten::cudnn_batch_norm": 5, "aten::miopen_batch_norm": 5,
    "aten::_native_batch_norm_legit": 5, "aten::_native_batch_norm_legit_no_training": False,
    "aten::_batch_norm_with_update": True, "aten::_batch_norm_no_update": False,
    "aten::batch_norm": 5, "aten::_batch_norm_impl_index": 5, "aten::instance_norm": True,
}
_COMPOSITE_BATCH_NORMS = ("aten::batch_norm", "aten::_batch_norm_impl_index", "aten::instance_norm")


def batch_norm_forward(call: Call) -> OpCost:
    x = call.tensor(0, "input")
    weight, bias = call.maybe_tensor(1, "weight"), call.maybe_tensor(2, "bias")
    rule = _BATCH_NORMS[call.name]
    if isinstance(rule, bool):
        training = rule
        stats_in = [call.maybe_tensor(3), call.maybe_tensor(4)]
    elif call.name == "aten::_native_batch_norm_legit" and isinstance(call.arg(3), bool):
        training = bool(call.arg(3))  # the no_stats overload
        stats_in = []
    else:
        training = bool(call.arg(rule, "training", False))
        stats_in = [call.maybe_tensor(3, "running_mean"), call.maybe_tensor(4, "running_var")]
    channels = x.shape[1] if x.ndim > 1 else x.shape[0]
    if training:
        flops = (5 + _affine_flops(weight, bias)) * x.numel
        saved = TensorMeta((channels,), acc_dtype(x.dtype))
        fallback = [x] if call.name in _COMPOSITE_BATCH_NORMS else [x, saved, saved]
    else:
        flops = (2 + _affine_flops(weight, bias)) * x.numel
        stats_in = [m for m in stats_in if m is not None]
        fallback = [x]
    reads = nbytes([x, weight, bias] + stats_in)
    return OpCost(float(flops), float(reads + _writes(call, fallback)), True)


register(*(n for n in _BATCH_NORMS if n not in _COMPOSITE_BATCH_NORMS))(batch_norm_forward)
register(*_COMPOSITE_BATCH_NORMS, composite=True)(batch_norm_forward)


@register("aten::native_batch_norm_backward", "aten::batch_norm_backward")
def native_batch_norm_backward(call: Call) -> OpCost:
    """(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps, output_mask)."""
    grad_out, x = call.tensor(0, "grad_out"), call.tensor(1, "input")
    weight = call.maybe_tensor(2, "weight")
    train = bool(call.arg(7, "train", True))
    extra = [weight] + [call.maybe_tensor(i) for i in (3, 4, 5, 6)]
    return _backward(call, grad_out, x, extra, weight, weight, call.arg(9, "output_mask"), 8 if train else 2)


@register("aten::cudnn_batch_norm_backward", "aten::miopen_batch_norm_backward")
def cudnn_batch_norm_backward(call: Call) -> OpCost:
    """(input, grad_output, weight, running_mean, running_var, save_mean, save_var, epsilon, reserveSpace)."""
    x, grad_out = call.tensor(0, "input"), call.tensor(1, "grad_output")
    weight = call.maybe_tensor(2, "weight")
    extra = [weight] + [call.maybe_tensor(i) for i in (5, 6)]
    return _backward(call, grad_out, x, extra, weight, weight, None, 8)


@register("aten::native_group_norm")
def native_group_norm(call: Call) -> OpCost:
    """(input, weight, bias, N, C, HxW, group, eps) -> (out, mean (N, group), rstd (N, group))."""
    x = call.tensor(0, "input")
    weight, bias = call.maybe_tensor(1, "weight"), call.maybe_tensor(2, "bias")
    n, groups = int(call.arg(3, "N", x.shape[0])), int(call.arg(6, "group", 1))
    stats = TensorMeta((n, groups), acc_dtype(x.dtype))
    flops = (5 + _affine_flops(weight, bias)) * x.numel
    return OpCost(float(flops), float(nbytes([x, weight, bias]) + _writes(call, [x, stats, stats])), True)


@register("aten::native_group_norm_backward")
def native_group_norm_backward(call: Call) -> OpCost:
    """(grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask)."""
    grad_out, x = call.tensor(0, "grad_out"), call.tensor(1, "input")
    weight = call.maybe_tensor(4, "weight")
    extra = [call.maybe_tensor(2), call.maybe_tensor(3), weight]
    return _backward(call, grad_out, x, extra, weight, weight, call.arg(9, "output_mask"), 8)



@register("aten::_weight_norm_interface")
def weight_norm(call: Call) -> OpCost:
    """(v, g, dim) -> (w, norms): v and g read, w (v's shape) and the norms (g's shape, float32) written."""
    v, g = call.tensor(0, "v"), call.tensor(1, "g")
    fallback = [v.with_shape(v.shape), TensorMeta(g.shape, acc_dtype(v.dtype))]
    return OpCost(3.0 * v.numel, float(v.nbytes + g.nbytes + _writes(call, fallback)), True)


@register("aten::_weight_norm_interface_backward")
def weight_norm_backward(call: Call) -> OpCost:
    """(grad_w, saved_v, saved_g, saved_norms, dim) -> (grad_v, grad_g)."""
    grad, v, g = call.tensor(0, "grad_w"), call.tensor(1, "saved_v"), call.tensor(2, "saved_g")
    norms = call.maybe_tensor(3, "saved_norms")
    reads = grad.nbytes + v.nbytes + g.nbytes + (norms.nbytes if norms is not None else 0)
    return OpCost(5.0 * v.numel, float(reads + _writes(call, [v, g])), True)


@register("aten::_weight_norm", composite=True)
def weight_norm_entry(call: Call) -> OpCost:
    """Composite (-> _weight_norm_interface, or norm_except_dim and a division): (v, g, dim) -> w."""
    v, g = call.tensor(0, "v"), call.tensor(1, "g")
    return OpCost(3.0 * v.numel, float(v.nbytes + g.nbytes + _writes(call, [v.with_shape(v.shape)])), True)
