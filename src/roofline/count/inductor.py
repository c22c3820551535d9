"""Kernels torch.compile (Inductor) generates, as a trace names them: ``triton_{poi,per,red,tem}_fused_<ops>_<n>``.

Their arguments are the kernel's buffers (inputs and outputs) followed by scalar sizes. These are ESTIMATES,
and each OpCost says so in its note:
- bytes = every tensor buffer once (an upper bound when a buffer is only partly read), except an embedding
  table fused into the kernel (``embedding`` in its name): only the rows its index buffer gathers;
- FLOPs of a template (``tem``) kernel whose name holds mm/bmm/addmm: 2*m*n*k, with (m, n) the last buffer
  (the output) and k = first buffer's numel / m;
- FLOPs of a pointwise/reduction kernel: the sum of the per-element counts of the aten ops named in the
  kernel's name (elementwise.py's table; reductions 1, softmax 5; views and copies 0) times the largest
  buffer's numel.
"""

from __future__ import annotations

import re

from roofline.count.elementwise import FLOPS_PER_ELEMENT
from roofline.count.registry import Call, OpCost, nbytes, register_prefix

_KERNEL = re.compile(r"^triton_(poi|per|red|tem|for|mm|bmm)_fused_(.*?)(?:_\d+)?$")
_EXTRA_FLOPS = {"pow": 1, "where": 1, "mean": 1, "sum": 1, "amax": 1, "amin": 1, "max": 1, "min": 1, "softmax": 5,
                "_softmax": 5, "log_softmax": 5, "_log_softmax": 5, "var_mean": 3, "native_layer_norm": 7,
                "native_dropout": 2}
_MATMULS = ("mm", "bmm", "addmm", "baddbmm")
_LONGEST_OP_NAME = 6  # in underscore-separated parts


def fused_op_names(fused: str) -> list[str]:
    """The aten ops the fused part of an Inductor kernel's name lists: "add_mean_mul_pow_rsqrt" -> [add, mean, ...]."""
    parts = fused.split("_")
    found: list[str] = []
    i = 0
    while i < len(parts):
        for width in range(min(_LONGEST_OP_NAME, len(parts) - i), 0, -1):
            candidate = "_".join(parts[i:i + width])
            bare = candidate.lstrip("_")
            if candidate in FLOPS_PER_ELEMENT or candidate in _EXTRA_FLOPS or bare in _MATMULS or \
                    (width > 1 and bare in FLOPS_PER_ELEMENT):
                found.append(bare if bare in _MATMULS else candidate)
                i += width
                break
        else:
            i += 1
    return found


def kernel_kind_and_ops(name: str) -> tuple[str, list[str]]:
    """("red", ["add", "mean", "mm", ...]) for an Inductor kernel's name; ("", []) for any other kernel."""
    match = _KERNEL.match(name)
    return (match.group(1), fused_op_names(match.group(2))) if match else ("", [])


@register_prefix("triton_")
def inductor_kernel(call: Call) -> OpCost:
    buffers = call.input_metas()
    if not buffers:
        raise ValueError("kernel buffers not recorded")
    kind, ops = kernel_kind_and_ops(call.name)
    if kind == "tem" and any(op in _MATMULS for op in ops) and len(buffers) >= 2:
        out, a = buffers[-1], buffers[0]
        m = out.numel // out.shape[-1] if out.shape and out.shape[-1] else 0
        k = a.numel // m if m else 0
        flops = 2.0 * out.numel * k
        how = "2*m*n*k from the template's buffers"
    else:
        per_element = sum(FLOPS_PER_ELEMENT.get(op, _EXTRA_FLOPS.get(op, 0)) for op in ops)
        flops = float(per_element * max(m.numel for m in buffers))
        how = f"{per_element} FLOP/elt from the fused op names"
    note = f"Inductor kernel, estimated: bytes = each buffer once, FLOPs {how}"
    moved = float(nbytes(buffers))
    if "embedding" in call.name:
        moved -= _unread_table_bytes(buffers)
        note += "; embedding table: gathered rows only"
    return OpCost(flops, moved, True, note=note)


def _unread_table_bytes(buffers: list) -> int:
    """Bytes of the largest 2-D float buffer (the table) beyond the rows the integer index buffer gathers."""
    indices = [b for b in buffers if b.dtype.startswith(("int", "uint"))]
    tables = [b for b in buffers if b.ndim == 2 and not b.dtype.startswith(("int", "uint", "bool"))]
    if not indices or not tables:
        return 0
    table = max(tables, key=lambda b: b.numel)
    gathered = max(i.numel for i in indices) * table.shape[1] * table.itemsize
    return max(table.nbytes - gathered, 0)
