"""Convolution forward (plain, strided, dilated, grouped, transposed; every backend's op name) and backward.

FLOPs follow torch.utils.flop_counter.conv_flop_count exactly:
  2 * batch * prod(weight.shape) * prod(spatial), spatial = the output's (or for a transposed conv the
  input's) spatial size. prod(weight.shape) already holds C_in/groups, so grouped convs are right. Bias
  is not counted; padding is not subtracted (as in FlopCounterMode).
Backward: grad_input as the matching (transposed) convolution, grad_weight as the convolution of input and
grad_output: FlopCounterMode's formula, EXCEPT that for grouped convolutions its grad_weight term counts every
input channel against every output channel (groups times the real work; depthwise convs by C). We count the
true work, grad_weight / groups, and say so in the note.
Complex input: conv1d/2d/3d and conv_transpose1d/2d/3d run ATen's complex_convolution, Gauss's trick over the real and
imaginary parts: three real convolutions, a = conv(xr, wr), b = conv(xi, wi), c = conv(xr + xi, wr + wi), and
a - b + i (c - a - b). The live pass and a trace's children see those real convolutions (float32 rows, counted as
above) and the element-wise passes; the composite's own formula, which stands for them where a trace holds it
without children, counts the three convolutions: 3x the real count, as FlopCounterMode does (it sees the three), not
the 4x of a complex matmul's real multiplies (matmul.py), which a cgemm does and this decomposition does not. A
complex aten::convolution itself has no CPU or CUDA kernel (slow_conv2d refuses ComplexFloat).
Bytes: input, weight and bias read once, output written once. Backward reads grad_output, plus weight when
grad_input is asked for and input when grad_weight is; writes the gradients asked for (output_mask).
"""

from __future__ import annotations

from math import prod
from typing import Any

from roofline.count.meta import TensorMeta
from roofline.count.registry import Call, OpCost, nbytes, register


def conv_flop_count(x_shape: tuple[int, ...], w_shape: tuple[int, ...], out_shape: tuple[int, ...],
                    transposed: bool = False) -> int:
    batch = x_shape[0]
    spatial = (x_shape if transposed else out_shape)[2:]
    return 2 * batch * prod(w_shape) * prod(spatial)


def _per_dim(value: Any, dims: int, default: int) -> list[int]:
    if value is None:
        return [default] * dims
    if isinstance(value, int):
        return [value] * dims
    values = [int(v) for v in value]
    if len(values) == 1:
        return values * dims
    if len(values) != dims:
        raise ValueError("convolution parameter length does not match the spatial dims")
    return values


def conv_output_shape(x: TensorMeta, w: TensorMeta, stride: Any, padding: Any, dilation: Any,
                      transposed: bool, output_padding: Any, groups: int) -> tuple[int, ...]:
    dims = x.ndim - 2
    kernel = w.shape[2:]
    stride_ = _per_dim(stride, dims, 1)
    dilation_ = _per_dim(dilation, dims, 1)
    if isinstance(padding, str):
        padding_ = [0] * dims if padding == "valid" else [d * (k - 1) // 2 for d, k in zip(dilation_, kernel)]
        if padding == "same":
            return (x.shape[0], w.shape[0]) + tuple(x.shape[2:])
    else:
        padding_ = _per_dim(padding, dims, 0)
    if transposed:
        out_pad = _per_dim(output_padding, dims, 0)
        spatial = tuple((i - 1) * s - 2 * p + d * (k - 1) + op + 1
                        for i, s, p, d, k, op in zip(x.shape[2:], stride_, padding_, dilation_, kernel, out_pad))
        channels = w.shape[1] * groups
    else:
        spatial = tuple((i + 2 * p - d * (k - 1) - 1) // s + 1
                        for i, s, p, d, k in zip(x.shape[2:], stride_, padding_, dilation_, kernel))
        channels = w.shape[0]
    return (x.shape[0], channels) + spatial


def _forward(call: Call, x: TensorMeta, w: TensorMeta, bias: TensorMeta | None, stride: Any, padding: Any,
             dilation: Any, transposed: bool, output_padding: Any, groups: Any) -> OpCost:
    groups = int(groups or 1)
    unbatched = x.ndim == w.ndim - 1
    if unbatched:
        x = TensorMeta((1,) + x.shape, x.dtype)
    if call.outputs:
        out = call.outputs[0]
        out_shape = out.shape if not unbatched else (1,) + out.shape
        written = nbytes(call.outputs)
    else:
        out_shape = conv_output_shape(x, w, stride, padding, dilation, transposed, output_padding, groups)
        written = prod(out_shape) * x.itemsize
    flops = conv_flop_count(x.shape, w.shape, out_shape, transposed)
    return OpCost(float(flops), float(nbytes([x, w, bias]) + written), True)


@register("aten::convolution", "aten::_convolution", "aten::convolution_overrideable")
def convolution(call: Call) -> OpCost:
    return _forward(call, call.tensor(0, "input"), call.tensor(1, "weight"), call.maybe_tensor(2, "bias"),
                    call.arg(3, "stride"), call.arg(4, "padding"), call.arg(5, "dilation"),
                    bool(call.arg(6, "transposed", False)), call.arg(7, "output_padding"), call.arg(8, "groups", 1))


GAUSS_NOTE = ("complex input: three real convolutions (Gauss's trick, as torch runs it); the element-wise passes "
              "not counted")


def _composite(cost: OpCost, x: TensorMeta) -> OpCost:
    """A composite's count: for a complex input, the three real convolutions torch runs (module docstring)."""
    if x.dtype.startswith("complex"):
        cost.flops *= 3
        cost.note = GAUSS_NOTE
    return cost


@register("aten::conv1d", "aten::conv2d", "aten::conv3d", composite=True)
def conv_nd(call: Call) -> OpCost:
    """Composite (-> convolution). Args: input, weight, bias, stride, padding, dilation, groups."""
    return _composite(_forward(call, call.tensor(0, "input"), call.tensor(1, "weight"), call.maybe_tensor(2, "bias"),
                    call.arg(3, "stride"), call.arg(4, "padding", 0), call.arg(5, "dilation"), False, None,
                    call.arg(6, "groups", 1)), call.tensor(0, "input"))


@register("aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d", composite=True)
def conv_transpose_nd(call: Call) -> OpCost:
    """Composite. Args: input, weight, bias, stride, padding, output_padding, groups, dilation."""
    return _composite(_forward(call, call.tensor(0, "input"), call.tensor(1, "weight"), call.maybe_tensor(2, "bias"),
                               call.arg(3, "stride"), call.arg(4, "padding", 0), call.arg(7, "dilation"), True,
                               call.arg(5, "output_padding"), call.arg(6, "groups", 1)), call.tensor(0, "input"))


@register("aten::cudnn_convolution", "aten::miopen_convolution")
def cudnn_convolution(call: Call) -> OpCost:
    """Args: self, weight, padding, stride, dilation, groups, ... (no bias).

    FlopCounterMode reads position 6 (``benchmark``) as ``transposed`` for this op; we do not.
    """
    return _forward(call, call.tensor(0, "self"), call.tensor(1, "weight"), None, call.arg(3, "stride"),
                    call.arg(2, "padding"), call.arg(4, "dilation"), False, None, call.arg(5, "groups", 1))


@register("aten::cudnn_convolution_transpose", "aten::miopen_convolution_transpose")
def cudnn_convolution_transpose(call: Call) -> OpCost:
    """Args: self, weight, padding, output_padding, stride, dilation, groups, ..."""
    return _forward(call, call.tensor(0, "self"), call.tensor(1, "weight"), None, call.arg(4, "stride"),
                    call.arg(2, "padding"), call.arg(5, "dilation"), True, call.arg(3, "output_padding"),
                    call.arg(6, "groups", 1))


@register("aten::mkldnn_convolution")
def mkldnn_convolution(call: Call) -> OpCost:
    """Args: self, weight, bias, padding, stride, dilation, groups."""
    return _forward(call, call.tensor(0, "self"), call.tensor(1, "weight"), call.maybe_tensor(2, "bias"),
                    call.arg(4, "stride"), call.arg(3, "padding"), call.arg(5, "dilation"), False, None,
                    call.arg(6, "groups", 1))


@register("aten::cudnn_convolution_relu", "aten::cudnn_convolution_add_relu")
def cudnn_convolution_relu(call: Call) -> OpCost:
    """Args: self, weight, (z, alpha,) bias, stride, padding, dilation, groups; the fused relu/add not counted."""
    offset = 2 if call.name.endswith("add_relu") else 0
    cost = _forward(call, call.tensor(0, "self"), call.tensor(1, "weight"), call.maybe_tensor(2 + offset, "bias"),
                    call.arg(3 + offset, "stride"), call.arg(4 + offset, "padding"),
                    call.arg(5 + offset, "dilation"), False, None, call.arg(6 + offset, "groups", 1))
    z = call.maybe_tensor(2, "z") if offset else None
    if z is not None:
        cost.bytes += z.nbytes
    return cost


@register("aten::_slow_conv2d_forward", "aten::thnn_conv2d", "aten::_nnpack_spatial_convolution",
          "aten::slow_conv3d", "aten::slow_conv3d_forward")
def slow_conv(call: Call) -> OpCost:
    """_slow_conv2d_forward(self, weight, kernel_size, bias, stride, padding); nnpack(input, weight, bias,
    padding, stride)."""
    if call.name == "aten::_nnpack_spatial_convolution":
        return _forward(call, call.tensor(0), call.tensor(1), call.maybe_tensor(2), call.arg(4, "stride"),
                        call.arg(3, "padding"), None, False, None, 1)
    return _forward(call, call.tensor(0), call.tensor(1), call.maybe_tensor(3, "bias"), call.arg(4, "stride"),
                    call.arg(5, "padding"), None, False, None, 1)


@register("aten::slow_conv_dilated2d", "aten::slow_conv_dilated3d")
def slow_conv_dilated(call: Call) -> OpCost:
    return _forward(call, call.tensor(0), call.tensor(1), call.maybe_tensor(3, "bias"), call.arg(4, "stride"),
                    call.arg(5, "padding"), call.arg(6, "dilation"), False, None, 1)


@register("aten::slow_conv_transpose2d", "aten::slow_conv_transpose3d")
def slow_conv_transpose(call: Call) -> OpCost:
    """Args: self, weight, kernel_size, bias, stride, padding, output_padding, dilation."""
    return _forward(call, call.tensor(0), call.tensor(1), call.maybe_tensor(3, "bias"), call.arg(4, "stride"),
                    call.arg(5, "padding"), call.arg(7, "dilation"), True, call.arg(6, "output_padding"), 1)


def _t(shape: tuple[int, ...]) -> tuple[int, ...]:
    return (shape[1], shape[0]) + tuple(shape[2:])


def conv_backward_costs(grad_out: TensorMeta, x: TensorMeta, w: TensorMeta, transposed: bool, groups: int,
                        mask: Any, bias_sizes: Any,
                        outputs: list[TensorMeta] | None) -> OpCost:
    mask = list(mask) if isinstance(mask, (list, tuple)) and len(mask) == 3 else [True, True, bias_sizes is not None]
    flops = 0.0
    reads: list[TensorMeta] = [grad_out]
    writes: list[TensorMeta] = []
    note = ""
    if mask[0]:
        flops += conv_flop_count(grad_out.shape, w.shape, x.shape, not transposed)
        reads.append(w)
        writes.append(x.with_shape(x.shape, grad_out.dtype))
    if mask[1]:
        if transposed:
            weight_flops = conv_flop_count(_t(grad_out.shape), _t(x.shape), _t(w.shape), False)
        else:
            weight_flops = conv_flop_count(_t(x.shape), _t(grad_out.shape), _t(w.shape), False)
        if groups > 1:
            weight_flops //= groups
            note = (f"grouped (groups={groups}): grad_weight counted as its true work, 1/{groups} of "
                    "FlopCounterMode's figure")
        flops += weight_flops
        reads.append(x)
        writes.append(w.with_shape(w.shape, grad_out.dtype))
    if mask[2]:
        writes.append(TensorMeta((grad_out.shape[1],), grad_out.dtype))
    if outputs is not None:
        writes = outputs
    return OpCost(float(flops), float(nbytes(reads) + nbytes(writes)), True, note=note)


@register("aten::convolution_backward", "aten::convolution_backward_overrideable")
def convolution_backward(call: Call) -> OpCost:
    """Args: grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding,
    groups, output_mask."""
    return conv_backward_costs(call.tensor(0, "grad_output"), call.tensor(1, "input"), call.tensor(2, "weight"),
                               bool(call.arg(7, "transposed", False)), int(call.arg(9, "groups", 1)),
                               call.arg(10, "output_mask"), call.arg(3, "bias_sizes"), call.outputs)


@register("aten::_slow_conv2d_backward", "aten::slow_conv3d_backward")
def slow_conv_backward(call: Call) -> OpCost:
    """Args: grad_output, self, weight, kernel_size, stride, padding, output_mask."""
    return conv_backward_costs(call.tensor(0), call.tensor(1), call.tensor(2), False, 1,
                               call.arg(6, "output_mask"), None, call.outputs)


@register("aten::cudnn_convolution_backward", "aten::mkldnn_convolution_backward")
def backend_conv_backward(call: Call) -> OpCost:
    """Args: self, grad_output, weight, padding, stride, dilation, groups, ..., output_mask (last)."""
    mask = call.args[-1] if call.args and isinstance(call.args[-1], (list, tuple)) else None
    return conv_backward_costs(call.tensor(1), call.tensor(0), call.tensor(2), False,
                               int(call.arg(6, "groups", 1)), mask, None, call.outputs)
