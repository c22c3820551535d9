"""Which trace events with a non-strided operand work on a sparse tensor, for the ops outside the matrix products.

A trace shows a sparse operand and an mkldnn one alike: a shape with an empty stride list (TensorMeta.strided).
The matrix products' formulas take it as sparse (an mkldnn tensor never reaches mm/addmm); for any other op
(add, mul, to_dense...) the difference is in the calls the op makes: an op on a sparse tensor reads its
metadata (``_nnz``, ``_indices``, ``crow_indices``...), an op on an mkldnn tensor does not. Such a sparse op's
elementwise or copy formula would charge the dense shape (a 64x64 COO matrix of 97 stored elements added to
itself: 4,096 FLOPs), so it becomes one unmodelled row with the reason, as a sparse product does.
"""

from __future__ import annotations

from roofline.capture.trace_model import Trace

SPARSE_METADATA = frozenset({
    "aten::_nnz", "aten::sparse_dim", "aten::dense_dim", "aten::_indices", "aten::_values", "aten::indices",
    "aten::values", "aten::crow_indices", "aten::col_indices", "aten::ccol_indices", "aten::row_indices",
    "aten::is_coalesced", "aten::coalesce", "aten::_coalesced_",
})


def reads_sparse_metadata(trace: Trace, idx: int, children: dict[int, list[int]]) -> bool:
    """Whether the event ``idx`` or one below it reads a sparse tensor's metadata."""
    stack = [idx]
    while stack:
        i = stack.pop()
        if trace.ops[i].name in SPARSE_METADATA:
            return True
        stack.extend(children.get(i, ()))
    return False
