"""The outputs of packed-sequence ops, which a trace does not record, read from their children's arguments.

How much ``_pack_padded_sequence`` packs (N = sum(lengths)) and how wide ``_pad_packed_sequence`` pads
(B = batch_sizes[0]) are values, not shapes: their formulas (count/copy.py) need the outputs. Both ops run the
same ATen code on every device, and its calls show the sizes: packing allocates its batch sizes with a 1-D
``aten::empty`` (one per time step) and ends with one ``aten::cat`` of the per-step slices (their rows add up to
N); padding starts with ``aten::full`` of the time-major padded size (T, B, *). Without those children (or with
the cat's list not recorded) the op stays uncounted, and the report takes its children instead, as before.
"""

from __future__ import annotations

from roofline.capture.trace_model import CpuOp, Trace
from roofline.count.meta import TensorMeta
from roofline.count.trace_args import args_from_trace

NEEDS_CHILDREN = frozenset({"aten::_pack_padded_sequence", "aten::_pad_packed_sequence"})


def outputs_from_children(trace: Trace, op: CpuOp, children: dict[int, list[int]],
                          args: list) -> list[TensorMeta] | None:
    """The outputs of ``op`` (one of NEEDS_CHILDREN, its own arguments ``args``) its children show; None if not."""
    source = args[0] if args and isinstance(args[0], TensorMeta) else None
    if source is None:
        return None
    kids = [trace.ops[k] for k in children.get(op.index, [])]
    if op.name == "aten::_pack_padded_sequence":
        cat = next((k for k in reversed(kids) if k.name == "aten::cat"), None)
        pieces = _first_arg(cat) if cat is not None else None
        if not isinstance(pieces, list) or not pieces or any(p.ndim == 0 for p in pieces):
            return None
        data = TensorMeta((sum(p.shape[0] for p in pieces), *pieces[0].shape[1:]), source.dtype)
        sizes = (_first_arg(k) for k in kids if k.name == "aten::empty")
        steps = next((size[0] for size in sizes if isinstance(size, list) and len(size) == 1), None)
        return [data] + ([TensorMeta((int(steps),), "int64")] if isinstance(steps, int) else [])
    full = next((k for k in kids if k.name == "aten::full"), None)
    size = _first_arg(full) if full is not None else None
    if not isinstance(size, list) or len(size) < 2 or not all(isinstance(s, int) for s in size):
        return None
    return [TensorMeta(tuple(size), source.dtype), TensorMeta((size[1],), "int64")]


def _first_arg(op: CpuOp):
    args = args_from_trace(op.input_dims, op.input_types, op.input_strides, op.concrete_inputs)
    return args[0] if args else None
