"""Reductions (sum, mean, amax, max/min over a dim, argmax, prod, all/any, var/std, norm, logsumexp, equal), scans
(cumsum, cumprod) and sorts (sort, topk, argsort).

FLOPs per INPUT element: 1 for sum/mean/max/min/argmax/prod/all/any (and _is_all_true/_is_any_true, their
whole-tensor forms that torch.distributions checks arguments with)/count_nonzero (one add or compare each;
mean's final division is not counted), 2 for norm (square, add), 3 for var/std (subtract mean, square,
add), 5 for logsumexp (exp counted as 4, add). Scans: 1 per element. sort/argsort: n*log2(n) compares per
sorted row of n; topk: n*log2(k) per row. searchsorted/bucketize: a binary search, ceil(log2(n + 1)) compares per
value looked up in a sorted row of n (the row read at most once; the int64 or int32 positions written).
Bytes: the input read once, each output written once. Without recorded outputs the output shape comes from
dim/keepdim (no dim: a full reduction to one element); argmax/argmin and the index output of max/min/sort/
topk are int64, all/any bool, sums of integer tensors int64.
"""

from __future__ import annotations

from math import ceil, log2

from roofline.count.meta import TensorMeta
from roofline.count.registry import Call, OpCost, nbytes, register
from roofline.count.shapes import normalize_dims, reduced_shape

# name -> (dim index, keepdim index, FLOPs per input element)
_REDUCTIONS: dict[str, tuple[int, int, int]] = {
    "aten::sum": (1, 2, 1), "aten::mean": (1, 2, 1), "aten::nansum": (1, 2, 1), "aten::nanmean": (1, 2, 1),
    "aten::amax": (1, 2, 1), "aten::amin": (1, 2, 1), "aten::max": (1, 2, 1), "aten::min": (1, 2, 1),
    "aten::argmax": (1, 2, 1), "aten::argmin": (1, 2, 1), "aten::prod": (1, 2, 1), "aten::all": (1, 2, 1),
    "aten::any": (1, 2, 1), "aten::aminmax": (1, 2, 1), "aten::count_nonzero": (1, 99, 1),
    "aten::var": (1, 3, 3), "aten::std": (1, 3, 3), "aten::var_mean": (1, 3, 3), "aten::std_mean": (1, 3, 3),
    "aten::norm": (2, 3, 2), "aten::linalg_vector_norm": (2, 3, 2), "aten::frobenius_norm": (1, 2, 2),
    "aten::logsumexp": (1, 2, 5), "aten::special_logsumexp": (1, 2, 5),
    "aten::_is_all_true": (1, 2, 1), "aten::_is_any_true": (1, 2, 1),
}
_BOOL_OUTPUT = {"aten::all", "aten::any", "aten::_is_all_true", "aten::_is_any_true"}
_INDEX_OUTPUT = {"aten::argmax", "aten::argmin", "aten::count_nonzero"}
_TWO_OUTPUTS = {"aten::var_mean", "aten::std_mean", "aten::aminmax"}
_INT_DTYPES = {"bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"}


def _dims_and_keepdim(call: Call, self_: TensorMeta) -> tuple[object, bool]:
    dim_index, keepdim_index, _ = _REDUCTIONS[call.name]
    dims = call.arg(dim_index, "dim")
    if isinstance(dims, bool) or not isinstance(dims, (int, list, tuple)):
        dims = None
    keepdim = call.arg(keepdim_index, "keepdim", False)
    return dims, bool(keepdim) if isinstance(keepdim, bool) else False


def reduction_cost(call: Call) -> OpCost:
    self_ = call.tensor(0, "self")
    flops_per_element = _REDUCTIONS[call.name][2]
    if call.outputs is not None:
        outputs = call.outputs
    else:
        dims, keepdim = _dims_and_keepdim(call, self_)
        shape = reduced_shape(self_.shape, dims, keepdim)
        if call.name in _INDEX_OUTPUT:
            outputs = [TensorMeta(shape, "int64")]
        elif call.name in _BOOL_OUTPUT:
            outputs = [TensorMeta(shape, "bool")]
        elif call.name in ("aten::sum", "aten::prod", "aten::nansum") and self_.dtype in _INT_DTYPES:
            outputs = [TensorMeta(shape, "int64")]
        else:
            outputs = [TensorMeta(shape, self_.dtype)]
            if call.name in _TWO_OUTPUTS:
                outputs.append(TensorMeta(shape, self_.dtype))
            elif call.name in ("aten::max", "aten::min") and dims is not None and \
                    normalize_dims(dims, self_.ndim) is not None:
                outputs.append(TensorMeta(shape, "int64"))
    inputs = [m for m in call.input_metas()]
    return OpCost(float(flops_per_element * self_.numel), float(nbytes(inputs) + nbytes(outputs)), True)


register(*(name for name in _REDUCTIONS if name not in ("aten::max", "aten::min")))(reduction_cost)


@register("aten::cumsum", "aten::cumsum_", "aten::cumprod", "aten::cumprod_", "aten::logcumsumexp",
          "aten::cummax", "aten::cummin", "aten::_cummax_helper", "aten::_cummin_helper")
def scan(call: Call) -> OpCost:
    """1 FLOP an element (logcumsumexp 5); output shaped like the input (cummax/cummin add int64 indices)."""
    self_ = call.tensor(0, "self")
    if call.inplace:
        return OpCost(float(self_.numel), 2.0 * self_.nbytes, True)
    outputs = call.outputs
    if outputs is None:
        outputs = [self_]
        if call.name in ("aten::cummax", "aten::cummin"):
            outputs.append(TensorMeta(self_.shape, "int64"))
    per_element = 5 if call.name == "aten::logcumsumexp" else 1
    return OpCost(float(per_element * self_.numel), float(self_.nbytes + nbytes(outputs)), True)


def _row_length(self_: TensorMeta, dim: object) -> int:
    if not self_.shape:
        return 1
    index = int(dim) % self_.ndim if isinstance(dim, int) and not isinstance(dim, bool) else self_.ndim - 1
    return self_.shape[index]


@register("aten::sort", "aten::argsort", "aten::msort")
def sort(call: Call) -> OpCost:
    """sort(self, dim=-1, descending) / sort.stable(self, *, stable, dim, descending): n*log2(n) per row."""
    self_ = call.tensor(0, "self")
    dim = call.arg(1, "dim", -1)
    n = _row_length(self_, dim if not isinstance(dim, bool) else -1)
    outputs = call.outputs
    if outputs is None:
        outputs = [TensorMeta(self_.shape, "int64")]
        if call.name != "aten::argsort":
            outputs.insert(0, self_)
    flops = self_.numel * log2(n) if n > 1 else 0.0
    return OpCost(float(flops), float(self_.nbytes + nbytes(outputs)), True)


@register("aten::searchsorted", "aten::bucketize")
def searchsorted(call: Call) -> OpCost:
    """searchsorted(sorted_sequence, self, *, out_int32, right, side, sorter); bucketize(self, boundaries, *,
    out_int32, right). A Scalar self looks up one value."""
    if call.name == "aten::searchsorted":
        rows, values = call.tensor(0, "sorted_sequence"), call.maybe_tensor(1, "self")
    else:
        values, rows = call.maybe_tensor(0, "self"), call.tensor(1, "boundaries")
    out_int32 = bool(call.arg(2, "out_int32", False))
    looked_up = values.numel if values is not None else 1
    sorter = call.maybe_tensor(5, "sorter") if call.name == "aten::searchsorted" else None
    written = nbytes(call.outputs) if call.outputs is not None else looked_up * (4 if out_int32 else 8)
    read = (values.nbytes if values is not None else 0) + rows.nbytes + (sorter.nbytes if sorter is not None else 0)
    flops = looked_up * ceil(log2(rows.shape[-1] + 1)) if rows.ndim else 0
    return OpCost(float(flops), float(read + written), True)


@register("aten::topk", "aten::kthvalue", "aten::median", "aten::nanmedian", "aten::mode")
def topk(call: Call) -> OpCost:
    """topk(self, k, dim=-1, ...): n*log2(k) compares per row; values and int64 indices written."""
    self_ = call.tensor(0, "self")
    k = call.arg(1, "k", 1) if call.name in ("aten::topk", "aten::kthvalue") else 1
    dim = call.arg(2 if call.name in ("aten::topk", "aten::kthvalue") else 1, "dim", -1)
    n = _row_length(self_, dim)
    if call.outputs is not None:
        outputs = call.outputs
    else:
        index = int(dim) % self_.ndim if self_.shape and isinstance(dim, int) else None
        if call.name == "aten::topk" and index is not None:
            shape = tuple(k if i == index else s for i, s in enumerate(self_.shape))
        elif index is not None:
            shape = tuple(s for i, s in enumerate(self_.shape) if i != index)
        else:
            shape = ()
        outputs = [TensorMeta(shape, self_.dtype), TensorMeta(shape, "int64")]
    flops = self_.numel * max(log2(max(int(k), 2)), 1.0) if n > 1 else 0.0
    return OpCost(float(flops), float(self_.nbytes + nbytes(outputs)), True)


@register("aten::histc", "aten::bincount", "aten::histogram")
def histogram(call: Call) -> OpCost:
    """2 FLOPs an input element (bin index: scale and floor, then an increment); input read, bins written."""
    x = call.tensor(0, "self")
    reads = call.input_metas()
    if call.outputs is not None:
        written = nbytes(call.outputs)
    else:
        bins = call.arg(1, "bins", 100)
        written = (bins if isinstance(bins, int) else 100) * (8 if call.name == "aten::bincount" else x.itemsize)
    return OpCost(2.0 * x.numel, float(nbytes(reads) + written), True)


@register("aten::equal")
def equal(call: Call) -> OpCost:
    """(self, other) -> a Python bool: one compare per element pair, both tensors read; nothing written to a tensor.
    Operands of different shapes are unequal without a read (0, 0). The count is the work of a True answer, the
    most the op does: a False one may stop at the first difference."""
    a, b = call.tensor(0, "self"), call.tensor(1, "other")
    if a.shape != b.shape:
        return OpCost(0.0, 0.0, True)
    return OpCost(float(a.numel), float(a.nbytes + b.nbytes), True)
