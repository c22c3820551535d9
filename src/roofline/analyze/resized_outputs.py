"""The result of an op whose output size depends on the data (``nonzero``, ``argwhere``), read from the resize
below it.

A trace records inputs only: how many elements ``nonzero`` found is a value, not a shape, so the op was unmodelled
(and with it every boolean-mask index, ``x[mask]``, which calls it). ATen allocates an empty result and resizes it
once the count is known: an ``aten::as_strided_`` (a CPU) or ``aten::resize_`` (CUDA, torch 2.11 on the H200) event
below the op, of an integer tensor, whose concrete size argument is the result's shape (on CUDA the transposed one,
(dims, count), which it then transposes: the same elements). Where no such call is recorded, the op stays
unmodelled, as before.
"""

from __future__ import annotations

from roofline.capture.trace_model import CpuOp, Trace
from roofline.count.meta import TensorMeta
from roofline.count.trace_args import args_from_trace

RESIZED_OUTPUT_OPS = frozenset({"aten::nonzero", "aten::argwhere"})
_RESIZES = frozenset({"aten::as_strided_", "aten::resize_"})
_INDEX_DTYPES = frozenset({"int64", "int32"})


def resized_output(trace: Trace, op: CpuOp, children: dict[int, list[int]],
                   args: list | None = None) -> list[TensorMeta] | None:
    """``op``'s result as the last resize of an integer tensor below it gives it; None if there is none."""
    found = None
    stack = list(reversed(children.get(op.index, [])))
    while stack:
        below = trace.ops[stack.pop()]
        if below.name in _RESIZES:
            call = args_from_trace(below.input_dims, below.input_types, below.input_strides, below.concrete_inputs)
            first = call[0] if call and isinstance(call[0], TensorMeta) else None
            size = call[1] if len(call) > 1 else None
            if first is not None and first.dtype in _INDEX_DTYPES and isinstance(size, list) \
                    and all(isinstance(s, int) and s >= 0 for s in size):
                found = [TensorMeta(tuple(size), first.dtype)]
            continue
        stack.extend(reversed(children.get(below.index, [])))
    return found
