"""softmax and log_softmax, forward and backward.

FLOPs per element: forward 5, the usual softmax figure: max, subtract, exp, sum, divide, each counted once
(inside softmax exp counts 1, unlike a standalone exp op, which elementwise.py counts as 4); log_softmax
likewise (max, subtract, exp, sum, subtract the log). Backward 4 (softmax: g*y, row sum, subtract,
multiply; log_softmax: exp, row sum, multiply, subtract).
Bytes: the input read once, the output written once (the kernel's second pass over a row is assumed to hit
cache). ``half_to_float`` writes float32. Backward reads grad_output and output, writes grad_input.
"""

from __future__ import annotations

from roofline.count.meta import dtype_name
from roofline.count.registry import Call, OpCost, nbytes, register

FORWARD_FLOPS_PER_ELEMENT = 5
BACKWARD_FLOPS_PER_ELEMENT = 4


@register("aten::_softmax", "aten::_log_softmax", "aten::_safe_softmax")
def softmax_forward(call: Call) -> OpCost:
    """_softmax(self, dim, half_to_float); _safe_softmax(self, dim, dtype)."""
    self_ = call.tensor(0, "self")
    if call.outputs is not None:
        outputs = call.outputs
    else:
        third = call.arg(2)
        if call.name == "aten::_safe_softmax":
            dtype = dtype_name(third) or self_.dtype
        else:
            dtype = "float32" if third is True else self_.dtype
        outputs = [self_.with_shape(self_.shape, dtype)]
    return OpCost(float(FORWARD_FLOPS_PER_ELEMENT * self_.numel), float(self_.nbytes + nbytes(outputs)), True)


@register("aten::softmax", "aten::log_softmax", "aten::special_softmax", "aten::special_log_softmax",
          composite=True)
def softmax_entry(call: Call) -> OpCost:
    """Composite (-> _softmax / _log_softmax, plus a cast when dtype= is given). softmax(self, dim, dtype)."""
    self_ = call.tensor(0, "self")
    dtype = dtype_name(call.arg(2, "dtype")) or self_.dtype
    outputs = call.outputs if call.outputs is not None else [self_.with_shape(self_.shape, dtype)]
    return OpCost(float(FORWARD_FLOPS_PER_ELEMENT * self_.numel), float(self_.nbytes + nbytes(outputs)), True)


@register("aten::_softmax_backward_data", "aten::_log_softmax_backward_data")
def softmax_backward(call: Call) -> OpCost:
    """(grad_output, output, dim, input_dtype): grad_input written at input_dtype."""
    grad_output, output = call.tensor(0, "grad_output"), call.tensor(1, "output")
    if call.outputs is not None:
        outputs = call.outputs
    else:
        dtype = dtype_name(call.arg(3, "input_dtype")) or grad_output.dtype
        outputs = [grad_output.with_shape(grad_output.shape, dtype)]
    reads = nbytes([grad_output, output])
    return OpCost(float(BACKWARD_FLOPS_PER_ELEMENT * grad_output.numel), float(reads + nbytes(outputs)), True)


@register("aten::_masked_softmax")
def masked_softmax(call: Call) -> OpCost:
    """_masked_softmax(self, mask, dim, mask_type): as softmax, the mask read too."""
    self_ = call.tensor(0, "self")
    mask = call.maybe_tensor(1, "mask")
    outputs = call.outputs if call.outputs is not None else [self_]
    return OpCost(float(FORWARD_FLOPS_PER_ELEMENT * self_.numel),
                  float(nbytes([self_, mask]) + nbytes(outputs)), True)


@register("aten::_masked_softmax_backward")
def masked_softmax_backward(call: Call) -> OpCost:
    grad_output, output = call.tensor(0, "grad_output"), call.tensor(1, "output")
    mask = call.maybe_tensor(2, "mask")
    outputs = call.outputs if call.outputs is not None else [grad_output]
    return OpCost(float(BACKWARD_FLOPS_PER_ELEMENT * grad_output.numel),
                  float(nbytes([grad_output, output, mask]) + nbytes(outputs)), True)
