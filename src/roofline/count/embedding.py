"""Embedding lookups and their backward.

FLOPs: a lookup is 0 (a gather); embedding_bag's sum/mean mode 1 per gathered element, 2 with per-sample
weights (a multiply and an add); the dense backward 1 per element of grad_output (an accumulate into its
row), 2 with per-sample weights; the per-sample weights' own gradient a dot product of a gathered row with
its bag's gradient row, 2 per gathered element.
embedding_renorm_ (an Embedding with max_norm, before each lookup) 3 per element of each distinct row it indexes
(the norm's power and sum, the rescale), every such row taken as rescaled (its writes an upper bound).
Bytes: a lookup reads only the rows it gathers (indices.numel * row size) plus the indices, and writes the
output; never the whole table. The dense backward reads grad_output and indices and writes the whole
(num_weights, dim) gradient table once (it is zero-filled, then accumulated into). The sparse backward
(sparse=True) makes a sparse gradient of grad_output's rows at the lookup's indices: 0 FLOPs, and 0 bytes, as its
values and indices are grad_output and the indices themselves, unless a padding_idx has it copy the rows it keeps.
"""

from __future__ import annotations

from math import prod

from roofline.count.live import Derived
from roofline.count.meta import TensorMeta
from roofline.count.registry import Call, OpCost, nbytes, register, zero_cost

DISTINCT_ROWS_KWARG = "_distinct_rows"


def _distinct_rows(args, kwargs) -> int | None:
    indices = args[1] if len(args) > 1 else kwargs.get("indices")
    try:
        return int(indices.unique().numel())
    except Exception:  # noqa: BLE001 - a meta or fake tensor: the formula takes every index as distinct
        return None


@register("aten::embedding")
def embedding(call: Call) -> OpCost:
    """(weight, indices, padding_idx, scale_grad_by_freq, sparse)."""
    weight, indices = call.tensor(0, "weight"), call.tensor(1, "indices")
    out = TensorMeta(indices.shape + weight.shape[1:], weight.dtype)
    written = nbytes(call.outputs) if call.outputs is not None else out.nbytes
    return OpCost(0.0, float(out.nbytes + indices.nbytes + written), True)


@register("aten::embedding_renorm_", live=Derived(DISTINCT_ROWS_KWARG, _distinct_rows))
def embedding_renorm(call: Call) -> OpCost:
    """(self (num_weights, dim), indices, max_norm, norm_type): each distinct indexed row's norm, and the row scaled
    in place when it exceeds max_norm. Live, the distinct rows are counted; from a trace every index is taken as
    distinct (at most the table's rows)."""
    weight, indices = call.tensor(0, "self"), call.tensor(1, "indices")
    known = call.kwargs.get(DISTINCT_ROWS_KWARG)
    rows = known if known is not None else min(indices.numel, weight.shape[0])
    row = prod(weight.shape[1:])
    note = "" if known is not None else \
        "every index taken as a distinct row (a trace records no values): an upper bound"
    return OpCost(float(3 * rows * row), float(indices.nbytes + 2 * rows * row * weight.itemsize), True, note=note)


@register("aten::embedding_dense_backward")
def embedding_dense_backward(call: Call) -> OpCost:
    """(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq)."""
    grad, indices = call.tensor(0, "grad_output"), call.tensor(1, "indices")
    num_weights = int(call.arg(2, "num_weights"))
    row = prod(grad.shape[indices.ndim:]) if grad.ndim > indices.ndim else grad.shape[-1]
    table = TensorMeta((num_weights, row), grad.dtype)
    written = nbytes(call.outputs) if call.outputs is not None else table.nbytes
    return OpCost(float(grad.numel), float(grad.nbytes + indices.nbytes + written), True)


@register("aten::embedding_sparse_backward")
def embedding_sparse_backward(call: Call) -> OpCost:
    """(grad, indices, num_weights, padding_idx, scale_grad_by_freq)."""
    grad, indices = call.tensor(0, "grad"), call.tensor(1, "indices")
    if int(call.arg(3, "padding_idx", -1)) < 0:
        return zero_cost("the gradient's rows and the indices become the sparse gradient as they are")
    return OpCost(0.0, float(2 * (grad.nbytes + indices.nbytes)), True)


@register("aten::embedding_backward", composite=True)
def embedding_backward(call: Call) -> OpCost:
    """Composite (-> embedding_dense_backward, or a sparse gradient when sparse=True)."""
    return embedding_dense_backward(call)


@register("aten::_embedding_bag", "aten::_embedding_bag_forward_only", "aten::embedding_bag")
def embedding_bag(call: Call) -> OpCost:
    """(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights, include_last_offset, ...)."""
    weight, indices = call.tensor(0, "weight"), call.tensor(1, "indices")
    offsets = call.maybe_tensor(2, "offsets")
    per_sample = call.maybe_tensor(6, "per_sample_weights")
    row = prod(weight.shape[1:])
    gathered = indices.numel * row
    if indices.ndim == 2:
        bags = indices.shape[0]
    else:
        bags = offsets.numel - (1 if call.arg(7, "include_last_offset", False) else 0) if offsets is not None else 1
    out = TensorMeta((bags, row), weight.dtype)
    written = nbytes(call.outputs) if call.outputs is not None else out.nbytes
    reads = gathered * weight.itemsize + nbytes([indices, offsets, per_sample])
    return OpCost(float(gathered * (2 if per_sample is not None else 1)), float(reads + written), True)


@register("aten::_embedding_bag_backward", "aten::_embedding_bag_dense_backward",
          "aten::_embedding_bag_sparse_backward")
def embedding_bag_backward(call: Call) -> OpCost:
    """(grad, indices, [offsets,] offset2bag, bag_size, [maximum_indices,] num_weights, ...,
    per_sample_weights, padding_idx): scatter-add of each bag's gradient row into the rows it gathered."""
    grad, indices = call.tensor(0, "grad"), call.tensor(1, "indices")
    num_weights = next(a for a in call.args[4:] if isinstance(a, int) and not isinstance(a, bool))
    per_sample = next((a for a in call.args[7:] if isinstance(a, TensorMeta)), None)
    row = prod(grad.shape[1:])
    scattered = indices.numel * row
    table = TensorMeta((num_weights, row), grad.dtype)
    written = nbytes(call.outputs) if call.outputs is not None else table.nbytes
    reads = scattered * grad.itemsize + nbytes([indices, per_sample])
    return OpCost(float(scattered * (2 if per_sample is not None else 1)), float(reads + written), True)


@register("aten::_embedding_bag_per_sample_weights_backward")
def embedding_bag_per_sample_weights_backward(call: Call) -> OpCost:
    """(grad, weight, indices, offsets, offset2bag, mode, padding_idx): one dot product per index."""
    grad, weight, indices = call.tensor(0, "grad"), call.tensor(1, "weight"), call.tensor(2, "indices")
    gathered = indices.numel * prod(weight.shape[1:])
    out = TensorMeta((indices.numel,), grad.dtype)
    written = nbytes(call.outputs) if call.outputs is not None else out.nbytes
    reads = 2 * gathered * weight.itemsize + nbytes([indices, call.maybe_tensor(4, "offset2bag")])
    return OpCost(2.0 * gathered, float(reads + written), True)
