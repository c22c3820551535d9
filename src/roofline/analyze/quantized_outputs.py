"""A quantized linear's output, which a trace does not record, read from the allocation its children make.

torch's quantized linear kernels take their weight prepacked (a script object the profiler records as nothing), so
a trace gives the input's shape and no weight. Their output allocation shows the out features: the static ops
(int8 in and out) resize an empty quantized tensor to it (``aten::resize_(t, [M, N])``), the dynamic ones (float in
and out) allocate it with ``aten::empty([M, N], float)``; both also allocate an int32 accumulator of that size.
With the output, count/quantized.py counts the linear exactly (2 * M * K * N) and its weight as (N, K) int8.
A convolution's output allocation gives its output channels, not its kernel size, stride or groups: those stay
unmodelled (its formula says why).
"""

from __future__ import annotations

from roofline.capture.trace_model import CpuOp, Trace
from roofline.count.meta import TensorMeta
from roofline.count.quantized import LINEARS
from roofline.count.trace_args import args_from_trace

QUANTIZED_LINEARS = frozenset(LINEARS)
_ALLOCATIONS = {"aten::resize_": 1, "aten::empty": 0, "aten::_empty_affine_quantized": 0}


def linear_outputs_from_children(trace: Trace, op: CpuOp, children: dict[int, list[int]],
                                 args: list) -> list[TensorMeta] | None:
    """[the output] of a quantized linear (``args`` its own arguments): the first child allocation of the input's
    leading dims and a last dim of its own (N); None when no child shows one."""
    x = args[0] if args and isinstance(args[0], TensorMeta) else None
    if x is None or x.ndim == 0:
        return None
    dtype = x.dtype if "dynamic" in op.name else "quint8"
    for kid in (trace.ops[k] for k in children.get(op.index, [])):
        position = _ALLOCATIONS.get(kid.name)
        if position is None:
            continue
        kid_args = args_from_trace(kid.input_dims, kid.input_types, kid.input_strides, kid.concrete_inputs)
        size = kid_args[position] if position < len(kid_args) else None
        if (isinstance(size, list) and len(size) == x.ndim and all(isinstance(s, int) for s in size)
                and tuple(size[:-1]) == x.shape[:-1] and size[-1] > 0):
            return [TensorMeta(tuple(size), dtype)]
    return None
