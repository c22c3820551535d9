"""Pooling (max, avg, adaptive), upsampling, grid sampling and im2col/col2im (unfold/fold), forward and backward.

FLOPs: max/avg pooling 1 per window element per output (a compare or an add; avg's divide not counted), fractional
max pooling too (its windows at pseudo-random offsets); max unpooling 0 (a scatter into a zero-filled output);
adaptive avg 1 per input element; nearest upsampling 0; bilinear 7 per output element (4 weights
applied, 3 adds), bicubic 31 (16 weights, 15 adds). Backward: 1 per grad_output window element.
grid_sample: as upsampling per output element (bilinear 7 / trilinear 15, bicubic 31, nearest 0) plus 4
per output location for the source coordinates (unnormalize and clip, shared by the channels); backward 2x
the forward (the input gradient scattered, the grid gradient from the same taps). affine_grid: the base grid of
homogeneous coordinates (N, *spatial, k+1) built, then one batched product with theta (2 FLOPs per multiply-add),
its bytes the base grid written and read, theta and the grid; its backward the same product with the grid's
gradient. im2col 0 (a copy);
col2im 1 per input element (overlapping patches summed).
Bytes: input read once, output (and max pooling's int64 indices) written once. A grid sample reads the grid
and at most the taps it gathers (never more than the input). Backward reads grad_output
(and the indices for max) and writes grad_input; ``self`` is passed for its shape only and is not read.
"""

from __future__ import annotations

from math import ceil, floor, prod
from typing import Any

from roofline.count.meta import TensorMeta
from roofline.count.registry import Call, OpCost, nbytes, register


def _per_dim(value: Any, dims: int, default: list[int]) -> list[int]:
    if value is None or (isinstance(value, (list, tuple)) and not value):
        return list(default)
    if isinstance(value, int):
        return [value] * dims
    values = [None if v is None else int(v) for v in value]  # adaptive pools: None keeps the input's size
    return values * dims if len(values) == 1 else values


def pooled_shape(x: TensorMeta, dims: int, kernel: Any, stride: Any, padding: Any, dilation: Any,
                 ceil_mode: bool) -> tuple[tuple[int, ...], list[int]]:
    kernel_ = _per_dim(kernel, dims, [1] * dims)
    stride_ = _per_dim(stride, dims, kernel_)
    padding_ = _per_dim(padding, dims, [0] * dims)
    dilation_ = _per_dim(dilation, dims, [1] * dims)
    spatial = []
    for size, k, s, p, d in zip(x.shape[-dims:], kernel_, stride_, padding_, dilation_):
        span = (size + 2 * p - d * (k - 1) - 1) / s
        out = (ceil(span) if ceil_mode else floor(span)) + 1
        if ceil_mode and (out - 1) * s >= size + p:
            out -= 1
        spatial.append(out)
    return tuple(x.shape[:-dims]) + tuple(spatial), kernel_


_MAX_POOLS = {"aten::max_pool1d_with_indices": 1, "aten::max_pool2d_with_indices": 2,
              "aten::max_pool3d_with_indices": 3, "aten::max_pool1d": 1, "aten::max_pool2d": 2,
              "aten::max_pool3d": 3, "aten::mkldnn_max_pool2d": 2, "aten::quantized_max_pool2d": 2}
_MAX_POOL_COMPOSITES = ("aten::max_pool1d", "aten::max_pool2d", "aten::max_pool3d")


def max_pool(call: Call) -> OpCost:
    """(self, kernel_size, stride, padding, dilation, ceil_mode); the *_with_indices forms also write
    int64 indices. max_pool2d is a composite on CUDA (-> max_pool2d_with_indices)."""
    x = call.tensor(0, "self")
    dims = _MAX_POOLS[call.name]
    shape, kernel = pooled_shape(x, dims, call.arg(1, "kernel_size"), call.arg(2, "stride"),
                                 call.arg(3, "padding"), call.arg(4, "dilation"), bool(call.arg(5, "ceil_mode", False)))
    if call.outputs is not None:
        written = nbytes(call.outputs)
    else:
        written = prod(shape) * x.itemsize + (prod(shape) * 8 if call.name.endswith("_with_indices") else 0)
    return OpCost(float(prod(shape) * prod(kernel)), float(x.nbytes + written), True)


register(*(n for n in _MAX_POOLS if n not in _MAX_POOL_COMPOSITES))(max_pool)
register(*_MAX_POOL_COMPOSITES, composite=True)(max_pool)


_AVG_POOLS = {"aten::avg_pool1d": 1, "aten::avg_pool2d": 2, "aten::avg_pool3d": 3}


@register(*_AVG_POOLS)
def avg_pool(call: Call) -> OpCost:
    """(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)."""
    x = call.tensor(0, "self")
    dims = _AVG_POOLS[call.name]
    shape, kernel = pooled_shape(x, dims, call.arg(1, "kernel_size"), call.arg(2, "stride"), call.arg(3, "padding"),
                                 None, bool(call.arg(4, "ceil_mode", False)))
    written = nbytes(call.outputs) if call.outputs is not None else prod(shape) * x.itemsize
    return OpCost(float(prod(shape) * prod(kernel)), float(x.nbytes + written), True)


_ADAPTIVE = {"aten::_adaptive_avg_pool2d": 2, "aten::_adaptive_avg_pool3d": 3, "aten::adaptive_avg_pool1d": 1,
             "aten::adaptive_avg_pool2d": 2, "aten::adaptive_avg_pool3d": 3, "aten::adaptive_max_pool1d": 1,
             "aten::adaptive_max_pool2d": 2, "aten::adaptive_max_pool3d": 3,
             "aten::mkldnn_adaptive_avg_pool2d": 2}
_ADAPTIVE_COMPOSITES = ("aten::adaptive_avg_pool1d", "aten::adaptive_avg_pool2d", "aten::adaptive_avg_pool3d",
                        "aten::adaptive_max_pool1d")


def adaptive_pool(call: Call) -> OpCost:
    """(self, output_size). adaptive_avg_pool2d is a composite (-> mean for 1x1, or _adaptive_avg_pool2d)."""
    x = call.tensor(0, "self")
    dims = _ADAPTIVE[call.name]
    size = _per_dim(call.arg(1, "output_size"), dims, list(x.shape[-dims:]))
    size = [x.shape[x.ndim - dims + i] if s is None else s for i, s in enumerate(size)]
    shape = tuple(x.shape[:-dims]) + tuple(size)
    if call.outputs is not None:
        written = nbytes(call.outputs)
    else:
        written = prod(shape) * x.itemsize + (prod(shape) * 8 if "max" in call.name else 0)
    return OpCost(float(x.numel), float(x.nbytes + written), True)


register(*(n for n in _ADAPTIVE if n not in _ADAPTIVE_COMPOSITES))(adaptive_pool)
register(*_ADAPTIVE_COMPOSITES, composite=True)(adaptive_pool)


_FRACTIONAL = {"aten::fractional_max_pool2d": 2, "aten::fractional_max_pool3d": 3}


@register(*_FRACTIONAL)
def fractional_max_pool(call: Call) -> OpCost:
    """(self, kernel_size, output_size, random_samples) -> (output, indices): a max over each kernel window at the
    pseudo-random offsets; the samples read, the output and its int64 indices written."""
    x, samples = call.tensor(0, "self"), call.maybe_tensor(3, "random_samples")
    dims = _FRACTIONAL[call.name]
    kernel = _per_dim(call.arg(1, "kernel_size"), dims, [1] * dims)
    size = _per_dim(call.arg(2, "output_size"), dims, list(x.shape[-dims:]))
    shape = tuple(x.shape[:-dims]) + tuple(size)
    written = nbytes(call.outputs) if call.outputs is not None else prod(shape) * (x.itemsize + 8)
    return OpCost(float(prod(shape) * prod(kernel)), float(nbytes([x, samples]) + written), True)


@register("aten::max_unpool2d", "aten::max_unpool3d")
def max_unpool(call: Call) -> OpCost:
    """(self, indices, output_size[, stride, padding]): no arithmetic; the output zero-filled and written whole,
    the input and its int64 indices read."""
    x, indices = call.tensor(0, "self"), call.tensor(1, "indices")
    if call.outputs is not None:
        written = nbytes(call.outputs)
    else:
        size = call.arg(2, "output_size")
        if not isinstance(size, (list, tuple)) or not size:
            raise ValueError("output_size not recorded")
        written = prod(x.shape[: x.ndim - len(size)]) * prod(int(v) for v in size) * x.itemsize
    return OpCost(0.0, float(nbytes([x, indices]) + written), True)


@register("aten::max_pool2d_with_indices_backward", "aten::max_pool3d_with_indices_backward",
          "aten::adaptive_max_pool2d_backward", "aten::adaptive_max_pool3d_backward",
          "aten::fractional_max_pool2d_backward", "aten::fractional_max_pool3d_backward")
def max_pool_backward(call: Call) -> OpCost:
    """(grad_output, self, ..., indices last): grad_output and indices read, grad_input written."""
    grad, x = call.tensor(0, "grad_output"), call.tensor(1, "self")
    indices = call.maybe_tensor(99, "indices")
    if indices is None and len(call.args) > 2 and isinstance(call.args[-1], TensorMeta):
        indices = call.args[-1]
    written = nbytes(call.outputs) if call.outputs is not None else x.numel * grad.itemsize
    return OpCost(float(grad.numel), float(nbytes([grad, indices]) + written), True)


@register("aten::avg_pool2d_backward", "aten::avg_pool3d_backward", "aten::_adaptive_avg_pool2d_backward",
          "aten::_adaptive_avg_pool3d_backward")
def avg_pool_backward(call: Call) -> OpCost:
    """(grad_output, self, ...): grad_output read, grad_input (self's shape) written; 1 FLOP per grad_input
    element."""
    grad, x = call.tensor(0, "grad_output"), call.tensor(1, "self")
    written = nbytes(call.outputs) if call.outputs is not None else x.numel * grad.itemsize
    return OpCost(float(x.numel), float(grad.nbytes + written), True)


_UPSAMPLE_FLOPS = {"nearest": 0, "linear": 3, "bilinear": 7, "trilinear": 15, "bicubic": 31}


def _upsample_kind(name: str) -> str:
    for kind in ("bicubic", "trilinear", "bilinear", "linear", "nearest"):
        if kind in name:
            return kind
    return "nearest"


@register("aten::upsample_nearest1d", "aten::upsample_nearest2d", "aten::upsample_nearest3d",
          "aten::_upsample_nearest_exact1d", "aten::_upsample_nearest_exact2d", "aten::_upsample_nearest_exact3d",
          "aten::upsample_linear1d", "aten::upsample_bilinear2d", "aten::upsample_trilinear3d",
          "aten::upsample_bicubic2d", "aten::_upsample_bilinear2d_aa", "aten::_upsample_bicubic2d_aa")
def upsample(call: Call) -> OpCost:
    """(self, output_size, ...): input read once, output written once."""
    x = call.tensor(0, "self")
    if call.outputs is not None:
        out_numel = max(m.numel for m in call.outputs)
        written = nbytes(call.outputs)
    else:
        size = call.arg(1, "output_size")
        if not isinstance(size, (list, tuple)) or not size:
            raise ValueError("output_size not recorded (scale factors need the recorded output)")
        out_numel = prod(x.shape[: x.ndim - len(size)]) * prod(int(s) for s in size)
        written = out_numel * x.itemsize
    flops = _UPSAMPLE_FLOPS[_upsample_kind(call.name)] * out_numel
    return OpCost(float(flops), float(x.nbytes + written), True)


@register("aten::upsample_nearest1d_backward", "aten::upsample_nearest2d_backward",
          "aten::upsample_nearest3d_backward", "aten::_upsample_nearest_exact1d_backward",
          "aten::_upsample_nearest_exact2d_backward", "aten::_upsample_nearest_exact3d_backward",
          "aten::upsample_linear1d_backward", "aten::upsample_bilinear2d_backward",
          "aten::upsample_trilinear3d_backward", "aten::upsample_bicubic2d_backward",
          "aten::_upsample_bilinear2d_aa_backward", "aten::_upsample_bicubic2d_aa_backward")
def upsample_backward(call: Call) -> OpCost:
    """(grad_output, output_size, input_size, ...): grad_output read, grad_input (input_size) written; as
    many FLOPs per grad_output element as the forward spends per output element (nearest: 1, an add)."""
    grad = call.tensor(0, "grad_output")
    if call.outputs is not None:
        written = nbytes(call.outputs)
    else:
        size = call.arg(2, "input_size")
        if not isinstance(size, (list, tuple)):
            raise ValueError("input_size not recorded")
        written = prod(int(s) for s in size) * grad.itemsize
    flops = max(_UPSAMPLE_FLOPS[_upsample_kind(call.name)], 1) * grad.numel
    return OpCost(float(flops), float(grad.nbytes + written), True)


_GRID_MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_TAPS = {"bilinear": 4, "nearest": 1, "bicubic": 16}
GRID_COORDINATE_FLOPS = 4


def _grid_sample_cost(x: TensorMeta, grid: TensorMeta, mode: int) -> tuple[float, float, TensorMeta]:
    kind = _GRID_MODES.get(mode, "bilinear")
    spatial = grid.numel // grid.shape[-1]
    out = TensorMeta((x.shape[0], x.shape[1]) + tuple(grid.shape[1:-1]), x.dtype)
    if kind == "bilinear" and grid.shape[-1] == 3:
        kind, taps = "trilinear", 8
    else:
        taps = _TAPS[kind]
    flops = _UPSAMPLE_FLOPS[kind] * out.numel + GRID_COORDINATE_FLOPS * spatial
    gathered = min(x.nbytes, out.numel * taps * x.itemsize)
    return float(flops), float(gathered + grid.nbytes), out


@register("aten::grid_sampler_2d", "aten::grid_sampler_3d", "aten::grid_sampler", "aten::cudnn_grid_sampler",
          "aten::_grid_sampler_2d_cpu_fallback")
def grid_sampler(call: Call) -> OpCost:
    """(input, grid, interpolation_mode (0 bilinear, 1 nearest, 2 bicubic), padding_mode, align_corners)."""
    x, grid = call.tensor(0, "input"), call.tensor(1, "grid")
    flops, reads, out = _grid_sample_cost(x, grid, int(call.arg(2, "interpolation_mode", 0)))
    written = nbytes(call.outputs) if call.outputs is not None else out.nbytes
    return OpCost(flops, reads + written, True)


@register("aten::grid_sampler_2d_backward", "aten::grid_sampler_3d_backward")
def grid_sampler_backward(call: Call) -> OpCost:
    """(grad_output, input, grid, interpolation_mode, padding_mode, align_corners, output_mask)."""
    grad, x, grid = call.tensor(0, "grad_output"), call.tensor(1, "input"), call.tensor(2, "grid")
    flops, reads, _ = _grid_sample_cost(x, grid, int(call.arg(3, "interpolation_mode", 0)))
    written = nbytes(call.outputs) if call.outputs is not None else x.nbytes + grid.nbytes
    return OpCost(2 * flops, reads + grad.nbytes + written, True)


def _affine_grid(theta_or_grad: TensorMeta, size: Any) -> tuple[float, float]:
    """(FLOPs, bytes of the base grid written and read) of affine_grid's product at ``size`` [N, C, *spatial]."""
    spatial, k = prod(int(v) for v in size[2:]), len(size) - 2
    base = int(size[0]) * spatial * (k + 1)
    return float(2 * base * k), float(2 * base * theta_or_grad.itemsize)


@register("aten::affine_grid_generator", composite=True)
def affine_grid_generator(call: Call) -> OpCost:
    """(theta (N, k, k+1), size [N, C, *spatial], align_corners) -> grid (N, *spatial, k)."""
    theta, size = call.tensor(0, "theta"), call.arg(1, "size")
    flops, base = _affine_grid(theta, size)
    grid = int(size[0]) * prod(int(v) for v in size[2:]) * (len(size) - 2) * theta.itemsize
    return OpCost(flops, base + theta.nbytes + grid, True)


@register("aten::affine_grid_generator_backward", composite=True)
def affine_grid_generator_backward(call: Call) -> OpCost:
    """(grad (N, *spatial, k), size, align_corners) -> grad_theta (N, k, k+1)."""
    grad, size = call.tensor(0, "grad"), call.arg(1, "size")
    flops, base = _affine_grid(grad, size)
    k = len(size) - 2
    return OpCost(flops, base + grad.nbytes + int(size[0]) * k * (k + 1) * grad.itemsize, True)


@register("aten::im2col", "aten::col2im")
def im2col(call: Call) -> OpCost:
    """im2col(self, kernel_size, dilation, padding, stride): a copy into patch columns;
    col2im(self, output_size, kernel_size, ...): the columns summed back into an image."""
    x = call.tensor(0, "self")
    if call.outputs is not None:
        written = nbytes(call.outputs)
    elif call.name == "aten::col2im":
        batch = x.shape[0] if x.ndim == 3 else 1
        channels = x.shape[-2] // prod(int(k) for k in call.arg(2, "kernel_size"))
        written = batch * channels * prod(int(v) for v in call.arg(1, "output_size")) * x.itemsize
    else:
        raise ValueError("im2col output not recorded")
    flops = float(x.numel) if call.name == "aten::col2im" else 0.0
    return OpCost(flops, float(x.nbytes + written), True)
