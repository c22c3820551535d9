"""Indexing: index_select, gather, scatter(_add/_reduce), index / index_put, index_add/copy/fill,
masked_scatter/masked_select, take, nonzero, slice/select backward and scatter, and .item().

FLOPs: 0 for pure data movement (gathers, copies, fills); 1 per source element for accumulating ops
(scatter_add, scatter_reduce, index_add, index_put with accumulate=True).
Bytes: a gather reads only the elements it gathers (= the output's size) plus the index, and writes the
output. An out-of-place scatter reads self and the scattered source and index, writes a full copy of
self; the in-place form reads the index and source and writes only the scattered elements. A data-dependent
output (nonzero, masked_select, boolean-mask index) needs the recorded output: without it the op is
unmodeled.
"""

from __future__ import annotations

from math import prod

from roofline.count.meta import TensorMeta
from roofline.count.registry import Call, OpCost, nbytes, register
from roofline.count.shapes import broadcast_shapes


def _dim(dim: object, ndim: int) -> int:
    return int(dim) % ndim if ndim else 0


@register("aten::index_select")
def index_select(call: Call) -> OpCost:
    """(self, dim, index): reads the selected slices and the index, writes them."""
    self_, index = call.tensor(0, "self"), call.tensor(2, "index")
    dim = _dim(call.arg(1, "dim", 0), self_.ndim)
    shape = tuple(index.numel if i == dim else s for i, s in enumerate(self_.shape))
    out = TensorMeta(shape, self_.dtype)
    written = nbytes(call.outputs) if call.outputs is not None else out.nbytes
    return OpCost(0.0, float(out.nbytes + index.nbytes + written), True)


@register("aten::gather")
def gather(call: Call) -> OpCost:
    """(self, dim, index, sparse_grad): the output has the index's shape."""
    self_, index = call.tensor(0, "self"), call.tensor(2, "index")
    out = TensorMeta(index.shape, self_.dtype)
    written = nbytes(call.outputs) if call.outputs is not None else out.nbytes
    return OpCost(0.0, float(out.nbytes + index.nbytes + written), True)


@register("aten::take", "aten::take_along_dim")
def take(call: Call) -> OpCost:
    self_, index = call.tensor(0, "self"), call.tensor(1, "index")
    out = TensorMeta(index.shape, self_.dtype)
    return OpCost(0.0, float(out.nbytes + index.nbytes + out.nbytes), True)


_SCATTER_ACCUMULATES = {"aten::scatter_add", "aten::scatter_add_", "aten::scatter_reduce",
                        "aten::scatter_reduce_"}


@register("aten::scatter", "aten::scatter_", "aten::scatter_add", "aten::scatter_add_", "aten::scatter_reduce",
          "aten::scatter_reduce_")
def scatter(call: Call) -> OpCost:
    """(self, dim, index, src|value, ...): index.numel elements written (in place) or a full copy of self."""
    self_, index = call.tensor(0, "self"), call.tensor(2, "index")
    src = call.maybe_tensor(3, "src")
    touched = index.numel * self_.itemsize
    src_read = index.numel * src.itemsize if src is not None and src.numel > 1 else (src.nbytes if src else 0)
    flops = float(index.numel) if call.name in _SCATTER_ACCUMULATES else 0.0
    if call.inplace:
        read_self = touched if call.name in _SCATTER_ACCUMULATES else 0
        return OpCost(flops, float(index.nbytes + src_read + read_self + touched), True)
    written = nbytes(call.outputs) if call.outputs is not None else self_.nbytes
    return OpCost(flops, float(self_.nbytes + index.nbytes + src_read + written), True)


def indexed_shape(self_: TensorMeta, indices: list) -> tuple[int, ...]:
    """Shape of self[indices] for integer index tensors (advanced indexing, numpy rules)."""
    positions = [i for i, idx in enumerate(indices) if idx is not None]
    index_metas = [indices[i] for i in positions]
    if any(not isinstance(m, TensorMeta) for m in index_metas):
        raise ValueError("index tensor shapes not recorded")
    if any(m.dtype in ("bool", "uint8") for m in index_metas):
        raise ValueError("boolean-mask index: output size depends on the data")
    broadcast = broadcast_shapes(m.shape for m in index_metas)
    rest = list(self_.shape[len(indices):])
    before = [s for i, s in enumerate(self_.shape[: len(indices)]) if i < positions[0] and indices[i] is None]
    between = [s for i, s in enumerate(self_.shape[: len(indices)]) if i > positions[0] and indices[i] is None]
    adjacent = positions == list(range(positions[0], positions[-1] + 1))
    if adjacent:
        after = [s for i, s in enumerate(self_.shape[: len(indices)]) if i > positions[-1]]
        return tuple(before) + broadcast + tuple(after) + tuple(rest)
    return broadcast + tuple(before) + tuple(between) + tuple(rest)


def _index_list(call: Call, position: int) -> list:
    indices = call.arg(position, "indices")
    if isinstance(indices, TensorMeta):
        indices = [indices]
    if not isinstance(indices, (list, tuple)) or not indices:
        raise ValueError("indices not recorded")
    return list(indices)


@register("aten::index", "aten::_unsafe_index")
def index(call: Call) -> OpCost:
    """self[indices]: reads the gathered elements and the index tensors, writes them."""
    self_ = call.tensor(0, "self")
    indices = _index_list(call, 1)
    index_bytes = nbytes(m for m in indices if isinstance(m, TensorMeta))
    if call.outputs is not None:
        out_bytes = nbytes(call.outputs)
    else:
        out_bytes = prod(indexed_shape(self_, indices)) * self_.itemsize
    return OpCost(0.0, float(out_bytes + index_bytes + out_bytes), True)


@register("aten::index_put", "aten::index_put_", "aten::_index_put_impl_", "aten::_unsafe_index_put",
          "aten::_index_put_impl")
def index_put(call: Call) -> OpCost:
    """self[indices] = values (accumulate adds): in place writes only the indexed elements."""
    self_ = call.tensor(0, "self")
    indices = _index_list(call, 1)
    values = call.tensor(2, "values")
    accumulate = bool(call.arg(3, "accumulate", False))
    index_bytes = nbytes(m for m in indices if isinstance(m, TensorMeta))
    try:
        elements = prod(indexed_shape(self_, indices))
    except ValueError:
        elements = values.numel
    touched = elements * self_.itemsize
    flops = float(elements) if accumulate else 0.0
    reads = index_bytes + min(values.nbytes, elements * values.itemsize) + (touched if accumulate else 0)
    if call.inplace:
        return OpCost(flops, float(reads + touched), True)
    written = nbytes(call.outputs) if call.outputs is not None else self_.nbytes
    return OpCost(flops, float(self_.nbytes + reads + written), True)


@register("aten::index_add", "aten::index_add_", "aten::index_copy", "aten::index_copy_", "aten::index_reduce",
          "aten::index_reduce_")
def index_add(call: Call) -> OpCost:
    """(self, dim, index, source, ...): source.numel elements of self updated."""
    self_, index_, source = call.tensor(0, "self"), call.tensor(2, "index"), call.tensor(3, "source")
    accumulates = "copy" not in call.name
    flops = float(source.numel) if accumulates else 0.0
    touched = source.numel * self_.itemsize
    reads = index_.nbytes + source.nbytes + (touched if accumulates else 0)
    if call.inplace:
        return OpCost(flops, float(reads + touched), True)
    written = nbytes(call.outputs) if call.outputs is not None else self_.nbytes
    return OpCost(flops, float(self_.nbytes + reads + written), True)


@register("aten::index_fill", "aten::index_fill_")
def index_fill(call: Call) -> OpCost:
    """(self, dim, index, value): the selected slices written."""
    self_, index_ = call.tensor(0, "self"), call.tensor(2, "index")
    dim = _dim(call.arg(1, "dim", 0), self_.ndim)
    slice_elements = prod(s for i, s in enumerate(self_.shape) if i != dim)
    touched = index_.numel * slice_elements * self_.itemsize
    if call.inplace:
        return OpCost(0.0, float(index_.nbytes + touched), True)
    written = nbytes(call.outputs) if call.outputs is not None else self_.nbytes
    return OpCost(0.0, float(self_.nbytes + index_.nbytes + written), True)


@register("aten::masked_scatter", "aten::masked_scatter_")
def masked_scatter(call: Call) -> OpCost:
    """(self, mask, source): the mask read, at most mask.numel source elements read and written."""
    self_, mask = call.tensor(0, "self"), call.tensor(1, "mask")
    source = call.tensor(2, "source")
    elements = min(source.numel, mask.numel)
    if call.inplace:
        return OpCost(0.0, float(mask.nbytes + elements * source.itemsize + elements * self_.itemsize), True)
    written = nbytes(call.outputs) if call.outputs is not None else self_.nbytes
    return OpCost(0.0, float(self_.nbytes + mask.nbytes + elements * source.itemsize + written), True)


DATA_DEPENDENT_OPS = ("aten::masked_select", "aten::nonzero", "aten::nonzero_static", "aten::argwhere",
                      "aten::unique", "aten::_unique", "aten::_unique2", "aten::unique_consecutive", "aten::unique_dim",
                      "aten::nonzero_numpy")


@register(*DATA_DEPENDENT_OPS[:-1])
def data_dependent(call: Call) -> OpCost:
    """Output size depends on the data: modeled only when the outputs were recorded."""
    if call.outputs is None:
        raise ValueError("output size depends on the data and was not recorded")
    inputs = call.input_metas()
    flops = float(max((m.numel for m in inputs), default=0))
    return OpCost(flops, float(nbytes(inputs) + nbytes(call.outputs)), True)


# where(cond) and nonzero(as_tuple=True) run as nonzero_numpy, which runs as nonzero and an unbind.
register("aten::nonzero_numpy", composite=True)(data_dependent)


@register("aten::where")
def where(call: Call) -> OpCost:
    """where(cond, self, other) is elementwise (1 FLOP/elt); where(cond) is nonzero."""
    from roofline.count.elementwise import elementwise_cost

    if len([a for a in call.args if a is not None]) <= 1:
        return data_dependent(call)
    return elementwise_cost(call, 1)


@register("aten::slice_backward", "aten::select_backward", "aten::diagonal_backward",
          "aten::as_strided_backward", "aten::unfold_backward")
def view_backward(call: Call) -> OpCost:
    """(grad_output, input_sizes, ...): a zero-filled gradient of input_sizes written, grad_output read."""
    grad = call.tensor(0, "grad_output")
    sizes = call.arg(1, "input_sizes")
    if call.outputs is not None:
        written = nbytes(call.outputs)
    elif isinstance(sizes, (list, tuple)):
        written = prod(int(s) for s in sizes) * grad.itemsize
    else:
        raise ValueError("input_sizes not recorded")
    return OpCost(0.0, float(grad.nbytes + written), True)


@register("aten::slice_scatter", "aten::select_scatter", "aten::diagonal_scatter", "aten::as_strided_scatter")
def view_scatter(call: Call) -> OpCost:
    """(self, src, ...): a copy of self with src written into a view of it."""
    self_, src = call.tensor(0, "self"), call.tensor(1, "src")
    written = nbytes(call.outputs) if call.outputs is not None else self_.nbytes
    return OpCost(0.0, float(self_.nbytes + src.nbytes + written), True)


@register("aten::_local_scalar_dense")
def local_scalar_dense(call: Call) -> OpCost:
    """Copies one element to the host (a device sync on CUDA)."""
    self_ = call.tensor(0, "self")
    return OpCost(0.0, float(self_.itemsize), True, note="one element copied to the host: a device sync")


@register("aten::item", composite=True)
def item(call: Call) -> OpCost:
    """Composite (-> _local_scalar_dense)."""
    return local_scalar_dense(call)
