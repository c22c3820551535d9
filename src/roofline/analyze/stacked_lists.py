"""The output of a stack or cat whose tensor list a trace did not record, read from the ops below it.

torch.profiler records a TensorList argument's shapes only up to 30 tensors (count/copy.py, PROFILER_LIST_LIMIT): a
longer list is [], and a cat or stack of one has no inputs to count (sweep 7's bidirectional GRU stacks its 60 time
steps' outputs, forward and backward). torch's stack runs as ``cat(tensors, dim).view(sizes)``: its trace event
holds an ``aten::cat`` (the list [] again) then an ``aten::view`` whose input is the cat's output (shape and dtype
recorded) and whose size argument is the stack's output. A cat on the CPU narrows its output below it
(``aten::narrow``, its input the whole output). The list holds exactly the output's elements, so the op counts as a
copy of that output (count/copy.py's rule for a known output: as many bytes read as written). A cat with no narrow
below it (CUDA's kernel copies every input at once) has nothing that shows its output: it stays unmodelled.
"""

from __future__ import annotations

from math import prod

from roofline.capture.trace_model import CpuOp, Trace
from roofline.count.meta import TensorMeta
from roofline.count.trace_args import args_from_trace

STACK_OPS = frozenset({"aten::stack", "aten::_stack"})
CAT_OPS = frozenset({"aten::cat", "aten::_cat", "aten::concat", "aten::concatenate"})


def list_unrecorded(op: CpuOp) -> bool:
    """The op's first argument, its tensor list, recorded as [] (or not at all)."""
    dims = op.input_dims
    return dims is not None and (not dims or dims[0] == [])


def stacked_output(trace: Trace, op: CpuOp, children: dict[int, list[int]], args: list) -> list[TensorMeta] | None:
    """The stack's output, as the view of its cat's output below it shows it; None where no such view is there."""
    kids = [trace.ops[k] for k in children.get(op.index, [])]
    if not any(k.name == "aten::cat" for k in kids):
        return None
    view = next((k for k in kids if k.name in ("aten::view", "aten::_unsafe_view", "aten::reshape")), None)
    if view is None:
        return None
    view_args = args_from_trace(view.input_dims, view.input_types, view.input_strides, view.concrete_inputs)
    if len(view_args) < 2 or not isinstance(view_args[0], TensorMeta):
        return None
    source, size = view_args[0], view_args[1]
    if not isinstance(size, list) or not all(isinstance(s, int) and s >= 0 for s in size) \
            or prod(size) != source.numel:
        return None
    return [TensorMeta(tuple(size), source.dtype)]


def catted_output(trace: Trace, op: CpuOp, children: dict[int, list[int]], args: list) -> list[TensorMeta] | None:
    """The cat's output, as the narrows of it below it show it (one shape and dtype among them all); None where
    there is no narrow below it, or they narrow different tensors."""
    narrowed = set()
    for k in children.get(op.index, []):
        kid = trace.ops[k]
        if kid.name != "aten::narrow":
            continue
        kid_args = args_from_trace(kid.input_dims, kid.input_types, kid.input_strides, kid.concrete_inputs)
        if not kid_args or not isinstance(kid_args[0], TensorMeta):
            return None
        narrowed.add((kid_args[0].shape, kid_args[0].dtype))
    if len(narrowed) != 1:
        return None
    shape, dtype = narrowed.pop()
    return [TensorMeta(tuple(shape), dtype)]
