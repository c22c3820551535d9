"""Half-precision matmuls whose dimensions are not multiples of 8: tensor cores want aligned K and N.

GPU reports only (on a CPU the alignment does not pick the kernel). Evidence: fp16/bf16 matmul ops whose inner
dimension K or output dimension N is not a multiple of 8 (conv: input or output channels).
"""

from __future__ import annotations

import math

from roofline.doctor.evidence import (CONV_KINDS, HALF_DTYPES, MATMUL_KINDS, has_roofs, is_gpu_report, matmul_operands,
                                      norm_dtype, op_kind, op_table, roofline_time_of, severity_for, tensor_inputs,
                                      top_locations)
from roofline.doctor.registry import register
from roofline.report import Finding, OpRecord, Report

RULE = "half-matmul-alignment"
ALIGN = 8


def misaligned_dims(op: OpRecord) -> tuple[int, int] | None:
    """(K, N) of a half matmul/conv with either not a multiple of 8, else None."""
    kind = op_kind(op.name)
    if kind not in CONV_KINDS and kind not in MATMUL_KINDS:
        return None
    floats = [d for _, d, _ in tensor_inputs(op) if d.startswith("float") or d in HALF_DTYPES]
    if not floats or floats[0] not in HALF_DTYPES:
        return None
    if kind in CONV_KINDS:
        if len(op.input_shapes) < 2 or len(op.input_shapes[0]) < 2 or not op.input_shapes[1]:
            return None
        k, n = op.input_shapes[0][1], op.input_shapes[1][0]
    elif kind in MATMUL_KINDS:
        operands = matmul_operands(op)
        if operands is None or len(operands[1]) < 2:
            return None
        a, b, _, _ = operands
        k, n = a[-1], b[-1]
    else:
        return None
    return (k, n) if k % ALIGN or n % ALIGN else None


@register(RULE, "half-precision matmul dims not a multiple of 8")
def check(report: Report) -> list[Finding]:
    if not is_gpu_report(report) or not has_roofs(report):
        return []
    table = op_table(report)
    dims = table.per_call(misaligned_dims)
    hits = [(table.ops[i], dims[table.call[i]]) for i in table.positions(dims)]
    if not hits:
        return []
    savings = 0.0
    for op, (k, n) in hits:
        grow = (math.ceil(k / ALIGN) * ALIGN * math.ceil(n / ALIGN) * ALIGN) / (k * n)
        padded = roofline_time_of(report, op.flops * grow, op.bytes * grow, norm_dtype(op.dtype) or "float16", op)
        savings += max(op.time_s - padded, 0.0) if padded > 0 else 0.0
    ops = [op for op, _ in hits]
    return [Finding(
        rule=RULE, category="precision",
        title=f"{len(ops)} half-precision matmul/conv ops with K or N not a multiple of {ALIGN}",
        evidence={"ops": len(ops), "dims_k_n": sorted({d for _, d in hits})[:8],
                  "time_s": sum(op.time_s for op in ops)},
        locations=top_locations(ops), estimated_savings_s=savings,
        savings_method=("upper bound: the ops' time above the roofline time of the shape padded to multiples of "
                        f"{ALIGN}"),
        fix=(f"pad the dimensions to a multiple of {ALIGN} (e.g. vocabulary, hidden or head sizes; pad_to_multiple_of "
             "in tokenizers/embeddings), so the GEMMs run on aligned tensor-core kernels"),
        severity=severity_for(report, savings),
    )]
