"""The index tensors of aten::index and index_put_, which newer torch traces record as an untyped, shapeless
argument ("" and []), read from the calls the op makes.

torch 2.14 records ``indices`` (a list of optional tensors) as nothing, so the formulas (count/indexing.py) had no
index to count from and the op was unmodelled (detection models gather boxes and scores this way). ATen's advanced
indexing on a CPU shows both what they need below the op: it views each index tensor for its TensorIterator
(``aten::reshape``/``aten::view`` of an integer tensor, with its shape), and restrides ``self`` to the shape of the
gathered (or, for index_put_, written) elements (``aten::as_strided`` of ``self`` whose concrete size is that shape).
The index tensors are taken as indexing consecutive dims of ``self`` (x[i], x[:, i], x[i, j]), placed where they give
exactly that shape; any placement that does gives the same count (the gathered elements and the index tensors).
Where none does, or the calls are not there, the op stays unmodelled, as before. A boolean mask (``x[mask]``) shows
the same calls after its ``aten::nonzero``, the mask turned into one integer index per mask dim: that nonzero is
returned with them (``IndexArgs.masks``), so that the one row the index makes counts the mask's work too.
"""

from __future__ import annotations

from typing import NamedTuple

from roofline.capture.trace_model import CpuOp, Trace
from roofline.count.indexing import indexed_shape
from roofline.count.meta import TensorMeta
from roofline.count.trace_args import TRACE_DTYPES, args_from_trace

INDEX_OPS = frozenset({"aten::index", "aten::_unsafe_index", "aten::index_put", "aten::index_put_",
                       "aten::_index_put_impl_", "aten::_unsafe_index_put"})
_INTEGER_INDEX = frozenset({"int64", "int32"})


def indices_unrecorded(op: CpuOp) -> bool:
    """Whether the event recorded its ``indices`` argument (the second) as nothing: no type, no shape."""
    types, dims = op.input_types or [], op.input_dims or []
    return len(types) > 1 and types[1] == "" and len(dims) > 1 and dims[1] == []


class IndexArgs(NamedTuple):
    args: list  # the op's arguments with the index tensors in place
    outputs: list[TensorMeta] | None  # aten::index's result
    masks: list[CpuOp]  # the nonzero events that turned boolean masks into those index tensors


def index_args_from_children(trace: Trace, op: CpuOp, children: dict[int, list[int]],
                             args: list) -> IndexArgs | None:
    """The index tensors (and aten::index's result) the calls below ``op`` show; None where they do not show them
    (module docstring)."""
    self_ = args[0] if args and isinstance(args[0], TensorMeta) else None
    if self_ is None:
        return None
    indices: list[TensorMeta] = []
    masks: list[CpuOp] = []
    restrided: list[int] | None = None
    stack = list(reversed(children.get(op.index, [])))
    while stack:
        below = trace.ops[stack.pop()]
        dtype = TRACE_DTYPES.get((below.input_types or [""])[0])
        if dtype == "bool":
            if below.name != "aten::nonzero":
                return None
            masks.append(below)
            continue
        call = args_from_trace(below.input_dims, below.input_types, below.input_strides, below.concrete_inputs)
        first = call[0] if call and isinstance(call[0], TensorMeta) else None
        if below.name in ("aten::reshape", "aten::view") and first is not None and dtype in _INTEGER_INDEX:
            indices.append(first)
        elif below.name == "aten::as_strided" and first is not None and first.shape == self_.shape \
                and restrided is None and len(call) > 1 and isinstance(call[1], list):
            restrided = call[1]
        else:
            stack.extend(reversed(children.get(below.index, [])))
    if not indices or restrided is None or not all(isinstance(s, int) for s in restrided):
        return None
    placed = next((p for p in _placements(self_, indices) if p is not None and indexed_shape(self_, p)
                   == tuple(restrided)), None)
    if placed is None:
        return None
    outputs = [TensorMeta(tuple(restrided), self_.dtype)] if op.name in ("aten::index", "aten::_unsafe_index") \
        else None
    return IndexArgs([self_, placed, *args[2:]], outputs, masks)


def _placements(self_: TensorMeta, indices: list[TensorMeta]):
    """The index tensors as indexing consecutive dims of ``self_`` from each first dim in turn (x[i], x[:, i]...);
    None for a placement whose shape torch would refuse."""
    for first in range(self_.ndim - len(indices) + 1):
        placed = [None] * first + indices
        try:
            indexed_shape(self_, placed)
        except ValueError:
            yield None
            continue
        yield placed
