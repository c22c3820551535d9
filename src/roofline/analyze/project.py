"""Projecting a measured op to another batch size, sequence length or dtype, from its recorded shapes.

Shapes: in every recorded input and output shape, a dimension equal to old batch x old seq (flattened tokens)
becomes new batch x new seq; a leading dimension equal to the old batch becomes the new batch (for batched matrix
products, a leading dimension that is a multiple of it: batch x heads); a dimension equal to the old sequence
length becomes the new one. The last dimension is a feature dimension and stays, unless the tensor is square in
the sequence (attention scores) or an operand of a batched product (K transposed ends in the sequence); a forward matrix product's weight stays (``_shapes``); 1-d tensors (biases, norm
weights) keep their size under a batch change. A dtype change rewrites floating tensors of the report's model dtype. Ops none of whose
shapes hold the batch or sequence (weights-only work such as an optimizer's update) are left as they are; a batch
equal to the sequence length is ambiguous and refused by the caller.

Work: the op's formula (count/) is evaluated on the old and the new shapes, and the recorded FLOPs and bytes are
scaled by the ratio, so arguments a report does not keep (a convolution's stride) cancel out. Where the formula
cannot answer from shapes alone, bytes scale with the tensors' bytes and FLOPs with the output elements.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

import msgspec

from roofline.count.counting import count_op
from roofline.count.families import op_kind
from roofline.count.meta import TensorMeta, dtype_itemsize
from roofline.report import OpRecord

FLOATS = ("float32", "float16", "bfloat16", "float64")
# Matrix products whose weight is an input: the index of the activation (the rows that batch and sequence scale).
_ROWS_ONLY = {"mm": 0, "addmm": 1, "_addmm_activation": 1, "mv": 0, "addmv": 1}
_BATCHED = frozenset({"bmm", "baddbmm", "scaled_dot_product_attention", "_scaled_dot_product_flash_attention",
                      "_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention_for_cpu"})


@dataclass(frozen=True)
class Change:
    """From -> to; a field left None is not changed."""

    batch: tuple[int, int] | None = None
    seq: tuple[int, int] | None = None
    dtype: tuple[str, str] | None = None

    def is_identity(self) -> bool:
        return all(c is None or c[0] == c[1] for c in (self.batch, self.seq, self.dtype))


def _dim(d: int, i: int, ndim: int, kind: str, change: Change, square: bool) -> int:
    ob, nb = change.batch or (0, 0)
    os_, ns = change.seq or (0, 0)
    last = i == ndim - 1 and ndim > 1 and not square
    if ob and os_ and d == ob * os_ and not last:
        return nb * ns
    if ob and i == 0 and ndim > 1 and d == ob:
        return nb
    if ob and i == 0 and kind in _BATCHED and d > ob and d % ob == 0:
        return d // ob * nb
    if os_ and d == os_ and not last:
        return ns
    return d


def _shape(shape: list[int], kind: str, change: Change, dims: int | None = None) -> list[int]:
    """``dims``: only the first ``dims`` dimensions may change (a matrix product's rows, a linear's batch dims)."""
    os_ = (change.seq or (0, 0))[0]
    # Scores and masks are (batch, heads, seq, seq) or (seq, seq); a 3-d (batch, seq, hidden) with hidden equal to
    # seq is activations (llama-tiny: dim 512 at seq 512).
    square = kind in _BATCHED or (bool(os_) and len(shape) != 3 and sum(d == os_ for d in shape) >= 2)
    n = len(shape) if dims is None else dims
    return [_dim(d, i, len(shape), kind, change, square) if i < n else d for i, d in enumerate(shape)]


def _shapes(op: OpRecord, kind: str, change: Change) -> tuple[list[list[int]], list[list[int]]]:
    """The op's input and output shapes under ``change``. In the forward pass a matrix product's weight (and a
    linear's feature dimension) never changes with batch or sequence: only the activation's rows do, which keeps a
    weight whose side equals batch x seq (llama-1b: 2048 = 4 x 512) as it is. Elsewhere the last dimension is a
    feature dimension unless the tensor is square in the sequence (attention scores, masks)."""
    forward = op.phase != "backward"
    if forward and kind in _ROWS_ONLY:
        act = _ROWS_ONLY[kind]
        ins = [_shape(s, kind, change, 1) if i == act else list(s) for i, s in enumerate(op.input_shapes)]
        return ins, [_shape(s, kind, change, 1) for s in op.output_shapes]
    if forward and kind in ("linear", "matmul"):
        ins = [_shape(s, kind, change, len(s) - 1) if i == 0 else list(s) for i, s in enumerate(op.input_shapes)]
        return ins, [_shape(s, kind, change, len(s) - 1) for s in op.output_shapes]
    return ([_shape(s, kind, change) for s in op.input_shapes], [_shape(s, kind, change) for s in op.output_shapes])


def _dtype(dtype: str, change: Change) -> str:
    if change.dtype and dtype == change.dtype[0] and dtype in FLOATS:
        return change.dtype[1]
    return dtype


def _metas(shapes: list[list[int]], dtypes: list[str], default: str) -> list[TensorMeta]:
    return [TensorMeta(tuple(s), dtypes[i] if i < len(dtypes) else default) for i, s in enumerate(shapes)]


def _count(op: OpRecord, ins: list[list[int]], in_dt: list[str], outs: list[list[int]], out_dt: list[str], dtype: str):
    return count_op(op.name, _metas(ins, in_dt, dtype), None, _metas(outs, out_dt, dtype) if outs else None)


def _bytes(shapes: list[list[int]], dtypes: list[str], default: str) -> float:
    return sum(prod(s) * dtype_itemsize(dtypes[i] if i < len(dtypes) else default) for i, s in enumerate(shapes))


def project_op(op: OpRecord, change: Change) -> OpRecord:
    """A copy of ``op`` with its shapes, dtype, FLOPs and bytes as they would be under ``change`` (time kept)."""
    kind = op_kind(op.name)
    ins, outs = _shapes(op, kind, change)
    in_dt = [_dtype(d, change) for d in op.input_dtypes]
    out_dt = [_dtype(d, change) for d in op.output_dtypes]
    dtype = _dtype(op.dtype, change)
    new = msgspec.structs.replace(op, input_shapes=ins, output_shapes=outs, input_dtypes=in_dt,
                                  output_dtypes=out_dt, dtype=dtype)
    if not op.modeled or (ins == op.input_shapes and outs == op.output_shapes and dtype == op.dtype
                          and in_dt == op.input_dtypes and out_dt == op.output_dtypes):
        return new
    old_cost = _count(op, op.input_shapes, op.input_dtypes, op.output_shapes, op.output_dtypes, op.dtype)
    new_cost = _count(op, ins, in_dt, outs, out_dt, dtype)
    if old_cost.modeled and new_cost.modeled and (old_cost.flops > 0 or old_cost.bytes > 0):
        flops_ratio = new_cost.flops / old_cost.flops if old_cost.flops > 0 else 1.0
        bytes_ratio = new_cost.bytes / old_cost.bytes if old_cost.bytes > 0 else 1.0
    else:
        old_b = _bytes(op.input_shapes + op.output_shapes, op.input_dtypes + op.output_dtypes, op.dtype)
        new_b = _bytes(ins + outs, in_dt + out_dt, dtype)
        bytes_ratio = new_b / old_b if old_b > 0 else 1.0
        old_e = sum(prod(s) for s in op.output_shapes) or sum(prod(s) for s in op.input_shapes)
        new_e = sum(prod(s) for s in outs) or sum(prod(s) for s in ins)
        flops_ratio = new_e / old_e if old_e > 0 else 1.0
    new.flops = op.flops * flops_ratio
    new.bytes = op.bytes * bytes_ratio
    return new


def model_dtype(ops: list[OpRecord]) -> str:
    """The floating dtype most of the ops' time (else most ops) runs in."""
    weight: dict[str, float] = {}
    for op in ops:
        if op.dtype in FLOATS:
            weight[op.dtype] = weight.get(op.dtype, 0.0) + (op.time_s or 1e-12) + op.flops * 1e-30
    return max(weight, key=weight.get) if weight else "float32"
