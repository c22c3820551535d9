"""Matrix products: mm, addmm, bmm, baddbmm, addbmm, mv, addmv, dot, outer/addr, _scaled_mm, _int_mm, _trilinear
(nn.Bilinear), and the composites that decompose to them (linear, matmul, einsum, bilinear).

FLOPs: 2*m*n*k for an (m,k) @ (k,n) product, exactly torch.utils.flop_counter's count (one multiply and one
add per term; the "2k-1" refinement is ignored as it is there). The bias / beta*self term of addmm, baddbmm,
addmv is not counted (FlopCounterMode does not count it either); outer/ger is 1 FLOP per output element.
_trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim) contracts three operands as ATen does, in two pairwise
products: i1 * i2 over their broadcast space, summed over the sumdim dims where i3 has size 1, then that with i3,
2 FLOPs per point of each product's space (nn.Bilinear, out[n, o] = x1[n, i] W[o, i, j] x2[n, j]:
2 N O I J + 2 N O J).
Bytes: both operands and the bias (at its own, possibly broadcast, size) read once; the result written once.
A sparse operand (mm, addmm, bmm, mv, addmv, _sparse_addmm, _sparse_mm, and the matmul/linear composites): 2 FLOPs
per stored element per column of the dense one, the sparse one read as stored; from a trace, which records no
nonzero count, such a product is unmodelled (with that reason), never counted as a dense one.
Complex operands: each complex multiply-add is 4 real multiplies and 4 real adds, so 4x the real count (8*m*n*k;
linalg.py and elementwise.py count complex work in real FLOPs the same way); FlopCounterMode counts 2*m*n*k for
complex products as for real ones, so it reads 4x lower on them.
A nested operand (TensorMeta.components, seen live; bmm, matmul, linear): the sum over its components of each
one's product, 2 * m * n * k each (as torch.utils.flop_counter counts the same products made one by one); the
note gives the product of every component padded to the largest, which a kernel that pads (torch's CPU matmul of
4-dim nested tensors does) computes instead.
"""

from __future__ import annotations

from dataclasses import replace
from math import prod

from roofline.count.meta import SPARSE_NOT_COUNTED, TensorMeta, dtype_name
from roofline.count.registry import Call, OpCost, nbytes, register, unmodeled
from roofline.count.shapes import broadcast_shapes


def _real_flops(flops: float, dtype: str) -> float:
    """A product's FLOPs counted in real arithmetic: 4x for complex operands (see the module docstring)."""
    return flops * (4 if dtype.startswith("complex") else 1)


def _cost(call: Call, flops: float, fallback_out: TensorMeta, reads: list[TensorMeta | None]) -> OpCost:
    outputs = call.outputs if call.outputs is not None else [fallback_out]
    return OpCost(float(_real_flops(flops, fallback_out.dtype)), float(nbytes(reads) + nbytes(outputs)), True)


def _mm_shapes(a: TensorMeta, b: TensorMeta) -> tuple[int, int, int]:
    m, k = a.shape
    k2, n = b.shape
    if k != k2:
        raise ValueError(f"inner dimensions differ: {k} vs {k2}")
    return m, k, n


@register("aten::mm", sparse_aware=True)
def mm(call: Call) -> OpCost:
    a, b = call.tensor(0, "self"), call.tensor(1, "mat2")
    if a.is_sparse or b.is_sparse:  # a CSR/CSC operand's @ reaches mm itself
        return _sparse_product(call, None, a, b)
    m, k, n = _mm_shapes(a, b)
    return _cost(call, 2 * m * n * k, TensorMeta((m, n), a.dtype), [a, b])


def _sparse_unknown(dense_flops: int, what: str) -> OpCost:
    """A product whose sparse operand's stored elements are not known (a trace records none): its work is unknown,
    so unmodelled, never counted as the dense product it is not; kept whole (its children, an addmm over the same
    operand and the sparse tensor's metadata calls, would count it no better). The note gives the dense
    product's FLOPs, which the sparse one does not exceed when its operand is coalesced."""
    return unmodeled(f"{SPARSE_NOT_COUNTED} (the dense {what} product, every element stored, would be "
                     f"{dense_flops:,} FLOPs)", keep_whole=True)


def _sparse_product(call: Call, bias: TensorMeta | None, a: TensorMeta, b: TensorMeta) -> OpCost:
    """A sparse (m,k) @ dense (k,n) product: 2 FLOPs per stored element of the sparse operand per output column,
    2*nnz*n (dense @ sparse: 2*m*nnz); bytes: the sparse operand as stored, the dense one and the bias read once,
    the dense result written once. sparse @ sparse is not modelled: its work depends on where the elements are."""
    m, k, n = _mm_shapes(a, b)
    if a.is_sparse and b.is_sparse:
        return unmodeled("sparse @ sparse product: its work depends on where the stored elements are",
                         keep_whole=True)
    sparse, dense = (a, b) if a.is_sparse else (b, a)
    if sparse.nnz is None:
        return _sparse_unknown(2 * m * k * n, f"{m}x{k} @ {k}x{n}")
    return _cost(call, 2 * sparse.nnz * (n if sparse is a else m), TensorMeta((m, n), dense.dtype), [bias, a, b])


def _as_sparse(t: TensorMeta) -> TensorMeta:
    """The operand an op takes as sparse by its schema, sparse even where its layout was not recorded (a trace
    without strides)."""
    return t if t.is_sparse else replace(t, strides=None, strided=False)


@register("aten::_sparse_addmm", sparse_aware=True)
def sparse_addmm(call: Call) -> OpCost:
    """torch.sparse.mm / torch.sparse.addmm: _sparse_addmm(self, mat1 sparse, mat2 dense)."""
    return _sparse_product(call, call.maybe_tensor(0, "self"), _as_sparse(call.tensor(1, "mat1")),
                           call.tensor(2, "mat2"))


@register("aten::_sparse_mm", sparse_aware=True)
def sparse_mm(call: Call) -> OpCost:
    return _sparse_product(call, None, _as_sparse(call.tensor(0, "sparse")), call.tensor(1, "dense"))


@register("aten::addmm", "aten::addmm_", "aten::_addmm_activation", sparse_aware=True)
def addmm(call: Call) -> OpCost:
    """addmm(self, mat1, mat2): 2mnk, bias not counted; _addmm_activation's fused relu/gelu not counted."""
    bias, a, b = call.maybe_tensor(0, "self"), call.tensor(1, "mat1"), call.tensor(2, "mat2")
    if a.is_sparse or b.is_sparse:
        return _sparse_product(call, bias, a, b)
    m, k, n = _mm_shapes(a, b)
    if call.inplace and bias is not None:
        return OpCost(_real_flops(2.0 * m * n * k, a.dtype), float(nbytes([bias, a, b]) + bias.nbytes), True)
    return _cost(call, 2 * m * n * k, TensorMeta((m, n), a.dtype), [bias, a, b])


def _bmm_shapes(a: TensorMeta, b: TensorMeta) -> tuple[int, int, int, int]:
    batch, m, k = a.shape
    batch2, k2, n = b.shape
    if batch != batch2 or k != k2:
        raise ValueError(f"bmm shapes do not match: {a.shape} @ {b.shape}")
    return batch, m, k, n


def _component_shapes(t: TensorMeta, count: int) -> tuple[tuple[int, ...], ...]:
    return t.components if t.components is not None else (t.shape,) * count


def _padded(shapes: tuple[tuple[int, ...], ...]) -> tuple[int, ...]:
    return tuple(max(dims) for dims in zip(*shapes))


def _nested_product(call: Call, a: TensorMeta, b: TensorMeta, bias: TensorMeta | None = None,
                    may_pad: bool = True) -> OpCost:
    """A product with a nested operand, component by component (a dense operand meets every component): the
    sum of each pair's 2 * batch * m * n * k; bytes: both operands as stored, the result (its components')."""
    count = len(a.components if a.components is not None else b.components or ())
    if a.components is not None and b.components is not None and len(b.components) != count:
        raise ValueError(f"nested operands with {count} and {len(b.components)} components")
    shapes_a, shapes_b = _component_shapes(a, count), _component_shapes(b, count)
    pairs = [matmul_shapes(sa, sb) for sa, sb in zip(shapes_a, shapes_b)]
    flops = 2 * sum(macs for _, macs in pairs)
    padded = 2 * count * matmul_shapes(_padded(shapes_a), _padded(shapes_b))[1]
    outputs = call.outputs if call.outputs is not None else \
        [TensorMeta((sum(prod(shape) for shape, _ in pairs),), a.dtype)]
    note = f"nested operand: {count} components' products summed"
    if may_pad and padded > flops:
        note += f" (every component padded to the largest: {padded:,} FLOPs)"
    return OpCost(float(flops), float(nbytes([a, b, bias]) + nbytes(outputs)), True, note=note)


@register("aten::bmm", sparse_aware=True, nested_aware=True)
def bmm(call: Call) -> OpCost:
    """A sparse (batch, m, k) operand @ dense: 2*nnz*n, as mm's."""
    a, b = call.tensor(0, "self"), call.tensor(1, "mat2")
    if a.components is not None or b.components is not None:
        return _nested_product(call, a, b)
    batch, m, k, n = _bmm_shapes(a, b)
    if b.is_sparse:
        return unmodeled("bmm with a sparse second operand is not modelled", keep_whole=True)
    if a.is_sparse:
        if a.nnz is None:
            return _sparse_unknown(2 * batch * m * k * n, f"{batch}x{m}x{k} @ {batch}x{k}x{n}")
        return _cost(call, 2 * a.nnz * n, TensorMeta((batch, m, n), b.dtype), [a, b])
    return _cost(call, 2 * batch * m * n * k, TensorMeta((batch, m, n), a.dtype), [a, b])


@register("aten::baddbmm", "aten::baddbmm_")
def baddbmm(call: Call) -> OpCost:
    bias, a, b = call.maybe_tensor(0, "self"), call.tensor(1, "batch1"), call.tensor(2, "batch2")
    batch, m, k, n = _bmm_shapes(a, b)
    if call.inplace and bias is not None:
        return OpCost(_real_flops(2.0 * batch * m * n * k, a.dtype), float(nbytes([bias, a, b]) + bias.nbytes),
                      True)
    return _cost(call, 2 * batch * m * n * k, TensorMeta((batch, m, n), a.dtype), [bias, a, b])


@register("aten::addbmm", "aten::addbmm_")
def addbmm(call: Call) -> OpCost:
    """Sum over the batch of products: 2*b*m*n*k; the result is (m, n)."""
    bias, a, b = call.maybe_tensor(0, "self"), call.tensor(1, "batch1"), call.tensor(2, "batch2")
    batch, m, k, n = _bmm_shapes(a, b)
    return _cost(call, 2 * batch * m * n * k, TensorMeta((m, n), a.dtype), [bias, a, b])


@register("aten::mv", sparse_aware=True)
def mv(call: Call) -> OpCost:
    a, v = call.tensor(0, "self"), call.tensor(1, "vec")
    return _matrix_vector(call, None, a, v)


def _matrix_vector(call: Call, bias: TensorMeta | None, a: TensorMeta, v: TensorMeta) -> OpCost:
    """(m,k) @ (k,): 2mk; a sparse matrix: 2*nnz."""
    m, k = a.shape
    if a.is_sparse:
        if a.nnz is None:
            return _sparse_unknown(2 * m * k, f"{m}x{k} @ {k}")
        return _cost(call, 2 * a.nnz, TensorMeta((m,), v.dtype), [bias, a, v])
    return _cost(call, 2 * m * k, TensorMeta((m,), a.dtype), [bias, a, v])


@register("aten::addmv", "aten::addmv_", sparse_aware=True)
def addmv(call: Call) -> OpCost:
    bias, a, v = call.maybe_tensor(0, "self"), call.tensor(1, "mat"), call.tensor(2, "vec")
    return _matrix_vector(call, bias, a, v)


@register("aten::dot", "aten::vdot")
def dot(call: Call) -> OpCost:
    a, b = call.tensor(0, "self"), call.tensor(1, "other")
    return _cost(call, 2 * a.numel, TensorMeta((), a.dtype), [a, b])


@register("aten::inner")
def inner(call: Call) -> OpCost:
    """Every last-dim vector of self against every one of other: output self.shape[:-1] + other.shape[:-1]; a
    0-dim operand makes it a plain product."""
    a, b = call.tensor(0, "self"), call.tensor(1, "other")
    if a.ndim == 0 or b.ndim == 0:
        other = b if a.ndim == 0 else a
        return _cost(call, other.numel, TensorMeta(tuple(other.shape), a.dtype), [a, b])
    out = tuple(a.shape[:-1]) + tuple(b.shape[:-1])
    return _cost(call, 2 * prod(out) * a.shape[-1], TensorMeta(out, a.dtype), [a, b])


@register("aten::outer", "aten::ger")
def outer(call: Call) -> OpCost:
    """One multiply per output element: 6 real FLOPs for a complex one (no add), 1.5x the 4x of a product's."""
    a, b = call.tensor(0, "self"), call.tensor(1, "vec2")
    flops = a.numel * b.numel * (1.5 if a.dtype.startswith("complex") else 1)
    return _cost(call, flops, TensorMeta((a.numel, b.numel), a.dtype), [a, b])


@register("aten::addr", "aten::addr_")
def addr(call: Call) -> OpCost:
    bias, a, b = call.maybe_tensor(0, "self"), call.tensor(1, "vec1"), call.tensor(2, "vec2")
    return _cost(call, 2 * a.numel * b.numel, TensorMeta((a.numel, b.numel), a.dtype), [bias, a, b])


@register("aten::_scaled_mm")
def scaled_mm(call: Call) -> OpCost:
    """FP8 matmul with scales: 2mnk (as FlopCounterMode); scales and bias read; output at out_dtype."""
    a, b = call.tensor(0, "self"), call.tensor(1, "mat2")
    m, k, n = _mm_shapes(a, b)
    out_dtype = dtype_name(call.arg(6, "out_dtype")) or a.dtype
    reads = [a, b, call.maybe_tensor(2, "scale_a"), call.maybe_tensor(3, "scale_b"),
             call.maybe_tensor(4, "bias"), call.maybe_tensor(5, "scale_result")]
    return _cost(call, 2 * m * n * k, TensorMeta((m, n), out_dtype), reads)


@register("aten::_grouped_mm", "aten::_scaled_grouped_mm")
def grouped_mm(call: Call) -> OpCost:
    """Mixture-of-experts matmul: groups of rows (2-D @ 3-D), of columns (3-D @ 2-D) or of the shared dim
    (2-D @ 2-D, a weight gradient) each multiplied by their own matrix, or a batch (3-D @ 3-D): 2 FLOPs per
    multiply-add actually done, whatever the split (``offs``)."""
    a, b = call.tensor(0, "self"), call.tensor(1, "mat2")
    if a.ndim == 2 and b.ndim == 3:  # (tokens, k) @ (groups, k, n) -> (tokens, n)
        flops, out = 2 * a.shape[0] * a.shape[1] * b.shape[2], (a.shape[0], b.shape[2])
    elif a.ndim == 3 and b.ndim == 2:  # (groups, m, k) @ (k, n_total) -> (m, n_total)
        flops, out = 2 * a.shape[1] * a.shape[2] * b.shape[1], (a.shape[1], b.shape[1])
    elif a.ndim == 2 and b.ndim == 2:  # (m, k_total) @ (k_total, n) -> (groups, m, n)
        offs = call.maybe_tensor(2 if call.name == "aten::_grouped_mm" else 4, "offs")
        groups = offs.numel if offs is not None else 1
        flops, out = 2 * a.shape[0] * a.shape[1] * b.shape[1], (groups, a.shape[0], b.shape[1])
    else:
        batch, m, k, n = _bmm_shapes(a, b)
        flops, out = 2 * batch * m * n * k, (batch, m, n)
    out_dtype = dtype_name(call.arg(4 if call.name == "aten::_grouped_mm" else 7, "out_dtype")) or a.dtype
    reads = [a, b] + [t for t in call.input_metas()[2:]]
    return _cost(call, flops, TensorMeta(out, out_dtype), reads)


@register("aten::_int_mm")
def int_mm(call: Call) -> OpCost:
    a, b = call.tensor(0, "self"), call.tensor(1, "mat2")
    m, k, n = _mm_shapes(a, b)
    return _cost(call, 2 * m * n * k, TensorMeta((m, n), "int32"), [a, b])


def matmul_shapes(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[tuple[int, ...], int]:
    """torch.matmul's output shape and its multiply-add count (batch * m * n * k)."""
    if len(a) == 0 or len(b) == 0:
        raise ValueError("matmul of a 0-dim tensor")
    a_vec, b_vec = len(a) == 1, len(b) == 1
    a2 = (1,) + a if a_vec else a
    b2 = b + (1,) if b_vec else b
    m, k = a2[-2], a2[-1]
    k2, n = b2[-2], b2[-1]
    if k != k2:
        raise ValueError(f"matmul inner dimensions differ: {k} vs {k2}")
    batch = broadcast_shapes([a2[:-2], b2[:-2]])
    out = list(batch) + ([] if a_vec else [m]) + ([] if b_vec else [n])
    return tuple(out), prod(batch) * m * n * k


def _expanded(shape: tuple[int, ...], dims: list[int], ndim: int) -> tuple[int, ...]:
    """``shape`` with size-1 dims inserted at ``dims`` (unsqueezed in order, as _trilinear does)."""
    out = list(shape)
    for d in sorted(int(d) % ndim for d in dims):
        out.insert(d, 1)
    return tuple(out)


@register("aten::_trilinear")
def trilinear(call: Call) -> OpCost:
    """(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim=1)."""
    i1, i2, i3 = call.tensor(0, "i1"), call.tensor(1, "i2"), call.tensor(2, "i3")
    ndim = i1.ndim + len(call.arg(3, "expand1", []))
    e1, e2, e3 = (_expanded(t.shape, list(call.arg(3 + k, f"expand{k + 1}", [])), ndim)
                  for k, t in enumerate((i1, i2, i3)))
    sumdim = {int(d) % ndim for d in call.arg(6, "sumdim", [])}
    first = broadcast_shapes([e1, e2])
    partial = tuple(1 if d in sumdim and e3[d] == 1 else size for d, size in enumerate(first))
    second = broadcast_shapes([partial, e3])
    out = TensorMeta(tuple(size for d, size in enumerate(second) if d not in sumdim), i1.dtype)
    return _cost(call, 2 * prod(first) + 2 * prod(second), out, [i1, i2, i3])


@register("aten::bilinear", composite=True)
def bilinear(call: Call) -> OpCost:
    """(input1 (..., I), input2 (..., J), weight (O, I, J), bias): composite (-> _trilinear, add)."""
    x1, x2, w, bias = call.tensor(0, "input1"), call.tensor(1, "input2"), call.tensor(2, "weight"), \
        call.maybe_tensor(3, "bias")
    rows, (o, i, j) = prod(x1.shape[:-1]), w.shape
    out = TensorMeta(tuple(x1.shape[:-1]) + (o,), x1.dtype)
    return _cost(call, 2 * rows * o * i * j + 2 * rows * o * j, out, [x1, x2, w, bias])


@register("aten::matmul", composite=True, sparse_aware=True, nested_aware=True)
def matmul(call: Call) -> OpCost:
    """Composite (-> mm / bmm / dot ...): 2 * batch * m * n * k."""
    a, b = call.tensor(0, "self"), call.tensor(1, "other")
    if a.components is not None or b.components is not None:
        return _nested_product(call, a, b)
    if a.is_sparse or b.is_sparse:
        if a.ndim == b.ndim == 2:
            return _sparse_product(call, None, a, b)
        return unmodeled(f"matmul with a sparse operand of {a.ndim} and {b.ndim} dims is not modelled",
                         keep_whole=True)
    out_shape, macs = matmul_shapes(a.shape, b.shape)
    return _cost(call, 2 * macs, TensorMeta(out_shape, a.dtype), [a, b])


@register("aten::linear", composite=True, sparse_aware=True, nested_aware=True)
def linear(call: Call) -> OpCost:
    """Composite (-> addmm / mm): x (..., in) @ W(out, in)^T: 2 * rows * in * out; bias not counted."""
    x, weight, bias = call.tensor(0, "input"), call.tensor(1, "weight"), call.maybe_tensor(2, "bias")
    if x.components is not None and weight.ndim == 2:
        return _nested_product(call, x, TensorMeta(weight.shape[::-1], weight.dtype), bias,
                               may_pad=False)
    if x.is_sparse or weight.is_sparse:
        if x.ndim == weight.ndim == 2:  # x @ W^T
            return _sparse_product(call, bias, x, TensorMeta(weight.shape[::-1], weight.dtype, None, weight.nnz,
                                                              weight.strided))
        return unmodeled("linear with a sparse operand of these dims is not modelled", keep_whole=True)
    rows = prod(x.shape[:-1])
    in_features = x.shape[-1]
    out_features = weight.shape[0] if weight.ndim == 2 else 1
    out_shape = x.shape[:-1] + ((out_features,) if weight.ndim == 2 else ())
    return _cost(call, 2 * rows * in_features * out_features, TensorMeta(out_shape, x.dtype), [x, weight, bias])


@register("aten::linear_backward", composite=True)
def linear_backward(call: Call) -> OpCost:
    """Composite (-> mm, sum; a nested tensor's linear runs it): (self, grad_output, weight, output_mask):
    grad_input grad_output @ W and grad_weight grad_output^T @ self, 2 * rows * in * out each, the bias gradient
    1 per grad_output element; each asked for by output_mask (default all three)."""
    x, grad, weight = call.tensor(0, "self"), call.tensor(1, "grad_output"), call.tensor(2, "weight")
    mask = call.arg(3, "output_mask", [True, True, True])
    rows, in_features, out_features = prod(x.shape[:-1]), x.shape[-1], weight.shape[0]
    product = _real_flops(2 * rows * in_features * out_features, x.dtype)
    flops = product * (bool(mask[0]) + bool(mask[1])) + (grad.numel if mask[2] else 0)
    reads = [grad] + ([weight] if mask[0] else []) + ([x] if mask[1] else [])
    fallback = [m for m, wanted in zip((x, weight, TensorMeta((out_features,), grad.dtype)), mask) if wanted]
    outputs = call.outputs if call.outputs is not None else fallback
    return OpCost(float(flops), float(nbytes(reads) + nbytes(outputs)), True)


@register("aten::einsum", composite=True)
def einsum(call: Call) -> OpCost:
    """Composite (-> bmm / mul ...): 2 * the product of every index's size when an index is summed away,
    else 1 FLOP per output element (a broadcast product). Ellipsis equations are not modeled."""
    equation = call.arg(0, "equation")
    operands = call.arg(1, "tensors")
    if not isinstance(equation, str) or "..." in equation or not isinstance(operands, (list, tuple)):
        raise ValueError("einsum equation or operands not recorded (or uses '...')")
    equation = equation.replace(" ", "")
    lhs, _, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError("einsum operand count differs from the equation")
    sizes: dict[str, int] = {}
    for term, operand in zip(terms, operands):
        if not isinstance(operand, TensorMeta) or len(term) != operand.ndim:
            raise ValueError("einsum operand shape not recorded")
        for letter, size in zip(term, operand.shape):
            sizes[letter] = max(sizes.get(letter, 1), size)
    if "->" not in equation:
        counts = {c: lhs.count(c) for c in sizes}
        rhs = "".join(sorted(c for c, n in counts.items() if n == 1))
    out_shape = tuple(sizes[c] for c in rhs)
    contracted = set(sizes) - set(rhs)
    total = prod(sizes.values())
    flops = 2 * total if contracted else total * max(len(operands) - 1, 1)
    return _cost(call, flops, TensorMeta(out_shape, operands[0].dtype), list(operands))
