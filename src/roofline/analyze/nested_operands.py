"""The buffer of a nested (ragged) operand, which a trace does not record, read from the allocations of the op.

A trace records a nested tensor argument with neither type nor shape (pipeline._first_operand_unrecorded), so an op
on one is left to its children; that loses the op's work where it runs its own kernel between allocations.
``native_layer_norm`` does (nn.TransformerEncoder's fast path in eval with a padding mask runs on nested tensors: its
two layer norms per layer were 18-28% of a CPU trace's time, unmodelled). ATen's nested layer norm (the same code on
every device) allocates its output as ``empty_like`` of the input's buffer, then its mean and rstd as
``empty({M})``, M rows of N = prod(normalized_shape) elements; the trace records the three ``aten::empty`` calls with
their sizes and the output's dtype. Those give the input exactly as the formula needs it: M x normalized_shape
elements of that dtype, the buffer's element count (what a live count reads from the nested tensor itself). Where
the allocations are missing or do not agree (M * N differs from the buffer's size), None: the op stays unmodelled.
"""

from __future__ import annotations

from math import prod

from roofline.capture.trace_model import CpuOp, Trace
from roofline.count.meta import TensorMeta, dtype_name
from roofline.count.trace_args import args_from_trace

NESTED_BUFFER_OPS = frozenset({"aten::native_layer_norm"})


def args_with_nested_buffer(trace: Trace, op: CpuOp, children: dict[int, list[int]], args: list) -> list | None:
    """``args`` (the op's recorded arguments) with its nested first operand replaced by the buffer its allocations
    show; None where they do not show it (module docstring)."""
    shape = args[1] if len(args) > 1 else None
    if not isinstance(shape, list) or not shape or not all(isinstance(s, int) for s in shape):
        return None
    sizes = []
    for k in children.get(op.index, []):
        child = trace.ops[k]
        if child.name == "aten::empty":
            sizes.append(args_from_trace(child.input_dims, child.input_types, child.input_strides,
                                         child.concrete_inputs))
        if len(sizes) == 3:
            break
    if len(sizes) < 3 or not all(len(a) > 1 and _one_dim(a[0]) for a in sizes):
        return None
    (numel,), (rows,), (rows_again,) = (a[0] for a in sizes)
    dtype = dtype_name(sizes[0][1])
    if dtype is None or rows != rows_again or rows * prod(shape) != numel:
        return None
    return [TensorMeta((rows, *shape), dtype), *args[1:]]


def _one_dim(size: object) -> bool:
    return isinstance(size, list) and len(size) == 1 and isinstance(size[0], int)
