"""Which trace events with a non-strided operand work on a sparse tensor, for the ops outside the matrix products.

A trace shows a sparse operand and an mkldnn one alike: a shape with an empty stride list (TensorMeta.strided).
The matrix products' formulas take it as sparse (an mkldnn tensor never reaches mm/addmm); for any other op
(add, mul, to_dense...) the difference is in the calls the op makes: an op on a sparse tensor reads its
metadata (``_nnz``, ``_indices``, ``crow_indices``...), an op on an mkldnn tensor does not. Such a sparse op's
elementwise or copy formula would charge the dense shape (a 64x64 COO matrix of 97 stored elements added to
itself: 4,096 FLOPs), so it becomes one unmodelled row with the reason, as a sparse product does; but for a dense
+ sparse add, whose kernel shows its values' shape in the conversion it makes (``sparse_values_dims``).
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


# dense.add_(sparse) (SGD's step on an nn.Embedding(sparse=True) gradient: sweep 7's DLRM, 7.8% of its time
# unmodelled): the kernel converts the values, ``values.to(dtype)``, before scattering them into the dense rows, so
# that call's input is the values' shape (nnz, *dense dims) the op itself never records.
DENSE_SPARSE_ADDS = frozenset({"aten::add_", "aten::add"})
_VALUES_CONVERSIONS = frozenset({"aten::to", "aten::_to_copy"})


def sparse_values_dims(trace: Trace, idx: int, children: dict[int, list[int]],
                       dense_dims: list[int]) -> list[int] | None:
    """The values' shape of the sparse operand (of ``dense_dims``) that the event ``idx`` converts below it: the
    first conversion whose input's trailing dims are ``dense_dims``' trailing ones; None without one."""
    stack = list(children.get(idx, ()))[::-1]
    while stack:
        op = trace.ops[stack.pop()]
        dims = op.input_dims[0] if op.name in _VALUES_CONVERSIONS and op.input_dims else None
        if isinstance(dims, list) and dims and all(isinstance(d, int) for d in dims) and len(dims) <= len(dense_dims) \
                and dims[1:] == dense_dims[len(dense_dims) - len(dims) + 1:]:
            return dims
        stack.extend(reversed(children.get(op.index, ())))
    return None


def dense_sparse_add_cost(values: list[int], dense_dims: list[int], itemsize: int,
                          inplace: bool) -> tuple[float, float]:
    """(FLOPs, bytes) of adding a sparse tensor of these values into a dense one: 1 FLOP per stored element (alpha's
    scaling aside, as a dense add's); its values and int64 indices read; in place, the rows they land in read and
    written; out of place (dense + sparse), the dense operand read and the result written whole."""
    stored, dense = 1, 1
    for d in values:
        stored *= d
    for d in dense_dims:
        dense *= d
    indices = values[0] * (len(dense_dims) - (len(values) - 1)) * 8
    rows = 2 * stored if inplace else 2 * dense
    return float(stored), float((stored + rows) * itemsize + indices)
