"""Precision islands: fp32 work and the casts around it inside a model that otherwise runs in fp16/bf16.

The model's dtype is the dtype of most of its matmul/conv/attention FLOPs. Inside a half model, a run of ops on
float32 tensors (typically entered by a cast up, half -> float, and left by a cast down) moves twice the bytes of
the same work in half, plus the casts' own round trips: e.g. a norm computed in fp32.
"""

from __future__ import annotations

from collections import defaultdict

from roofline.doctor.evidence import (ATTENTION_KINDS, CONV_KINDS, ELEMENTWISE_KINDS, HALF_DTYPES, MATMUL_KINDS,
                                      VIEW_KINDS, generic_module, has_roofs, input_dtype, is_aten_like, itemsize,
                                      location, op_kind, ordered_ops, output_dtype, severity_for, tensor_inputs,
                                      top_locations)
from roofline.doctor.registry import register
from roofline.report import Finding, OpRecord, Report

RULE = "precision-island"
CAST_KINDS = frozenset({"_to_copy", "to", "type_as", "copy", "_cast_Float", "_cast_Half", "_cast_BFloat16"})
SKIPPED_PHASES = frozenset({"optimizer"})


def _call_key(op: OpRecord) -> tuple:
    """What an op's answers here depend on: its name and its (shared) argument lists, by identity: memoised for one
    check, while the report holds them."""
    return op.name, id(op.input_shapes), id(op.input_dtypes), id(op.input_strides)


def model_dtype(report: Report) -> str:
    """The dtype carrying most matmul/conv/attention FLOPs (their count when FLOPs are unknown)."""
    weight: dict[str, float] = defaultdict(float)
    first_float: dict[tuple, str | None] = {}
    for op in report.ops:
        key = _call_key(op)
        if key not in first_float:
            kind = op_kind(op.name)
            floats = ([d for _, d, _ in tensor_inputs(op) if d.startswith("float") or d in HALF_DTYPES]
                      if kind in MATMUL_KINDS or kind in CONV_KINDS or kind in ATTENTION_KINDS else [])
            first_float[key] = floats[0] if floats else None
        dtype = first_float[key]
        if dtype is not None:
            weight[dtype] += op.flops if op.flops > 0 else 1.0
    return max(weight, key=weight.get) if weight else ""


def _float_inputs(op: OpRecord) -> set[str]:
    return {d for _, d, _ in tensor_inputs(op) if d.startswith("float") or d in HALF_DTYPES}


def _cast_direction(op: OpRecord, following: OpRecord | None, half: str) -> str | None:
    """'up' (half -> float32), 'down' (float32 -> half) or None for a cast op."""
    kind = op_kind(op.name)
    if kind not in CAST_KINDS:
        return None
    if kind == "copy":
        dst, src = input_dtype(op, 0), {input_dtype(op, 1)}
    else:
        src = _float_inputs(op)
        dst = output_dtype(op)
        if not op.output_dtypes and (not dst or dst in src) and following is not None:
            follow = _float_inputs(following)
            dst = "float32" if "float32" in follow else (half if half in follow else dst)
    if half in src and dst == "float32":
        return "up"
    if "float32" in src and dst in HALF_DTYPES:
        return "down"
    return None


def _is_fp32_compute(op: OpRecord) -> bool:
    """An op computing in fp32: its first floating input is fp32, or (elementwise) an fp32 operand promotes it."""
    kind = op_kind(op.name)
    if kind in CAST_KINDS or not is_aten_like(op):
        return False
    floats = [d for _, d, _ in tensor_inputs(op) if d.startswith("float") or d in HALF_DTYPES]
    if not floats:
        return False
    return floats[0] == "float32" or ("float32" in floats and kind in ELEMENTWISE_KINDS)


def find_islands(report: Report, half: str) -> list[list[tuple[OpRecord, str]]]:
    """Runs of (op, role) with role 'up', 'down' or 'fp32'; each run holds at least one fp32 compute op."""
    ops = [op for op in ordered_ops(report) if op_kind(op.name) not in VIEW_KINDS and op.phase not in SKIPPED_PHASES]
    islands: list[list[tuple[OpRecord, str]]] = []
    run: list[tuple[OpRecord, str]] = []

    def close() -> None:
        nonlocal run
        if any(role == "fp32" for _, role in run):
            islands.append(run)
        run = []

    fp32_compute: dict[tuple, bool] = {}
    for i, op in enumerate(ops):
        following = ops[i + 1] if i + 1 < len(ops) else None
        direction = _cast_direction(op, following, half) if op_kind(op.name) in CAST_KINDS else None
        if direction is None:
            key = _call_key(op)
            computes = fp32_compute.get(key)
            if computes is None:
                computes = fp32_compute[key] = _is_fp32_compute(op)
        if direction == "up":
            close()
            run = [(op, "up")]
        elif direction == "down":
            if run:
                run.append((op, "down"))
            close()
        elif computes:
            if run and run[-1][0].step != op.step:
                close()
            run.append((op, "fp32"))
        else:
            close()
    close()
    return islands


def _fp32_savings(report: Report, op: OpRecord, half: str) -> float:
    kind = op_kind(op.name)
    c = report.ceilings
    if (kind in MATMUL_KINDS or kind in CONV_KINDS) and op.bound == "compute":
        fast, slow = c.peak_for(half), c.peak_for("float32")
        return op.time_s * max(1.0 - slow / fast, 0.0) if fast > 0 and slow > 0 else 0.0
    return op.time_s * (1.0 - itemsize(half) / itemsize("float32"))


@register(RULE, "fp32 ops and cast pairs inside an fp16/bf16 model")
def check(report: Report) -> list[Finding]:
    if not has_roofs(report):
        return []
    half = model_dtype(report)
    if half not in HALF_DTYPES:
        return []
    groups: dict[str, list[list[tuple[OpRecord, str]]]] = defaultdict(list)
    for island in find_islands(report, half):
        first = next(op for op, role in island if role == "fp32")
        groups[generic_module(first.module) or location(first)].append(island)
    findings = []
    for islands in groups.values():
        first = next(op for op, role in islands[0] if role == "fp32")
        where = generic_module(first.module) or location(first)
        casts = [op for isl in islands for op, role in isl if role in ("up", "down")]
        fp32_ops = [op for isl in islands for op, role in isl if role == "fp32"]
        cast_time = sum(op.time_s for op in casts)
        fp32_time = sum(op.time_s for op in fp32_ops)
        savings = cast_time + sum(_fp32_savings(report, op, half) for op in fp32_ops)
        kinds = sorted({op_kind(op.name) for op in fp32_ops})
        up = sum(1 for isl in islands for _, role in isl if role == "up")
        down = sum(1 for isl in islands for _, role in isl if role == "down")
        cast_sources = top_locations([op for op in casts] or fp32_ops)
        findings.append(Finding(
            rule=RULE, category="precision",
            title=(f"fp32 island in a {half} model: {len(fp32_ops)} fp32 ops ({', '.join(kinds[:6])}) x{len(islands)} "
                   f"in {where}"),
            evidence={"model_dtype": half, "islands": len(islands), "fp32_ops": len(fp32_ops),
                      "fp32_op_kinds": kinds, "casts_up": up, "casts_down": down,
                      "cast_time_s": cast_time, "fp32_time_s": fp32_time},
            locations=cast_sources + [loc for loc in top_locations(fp32_ops) if loc not in cast_sources][:3],
            estimated_savings_s=savings,
            savings_method=(f"the casts' measured time (removed) + the fp32 ops' time scaled by the bytes {half} saves "
                            f"({itemsize(half)}/{itemsize('float32')} of the traffic at the same bandwidth; compute-bound "
                            "matmuls by the ratio of the fp32 and half compute roofs)"),
            fix=(f"compute these ops in {half}: drop the .float()/.to(float32) and the cast back (e.g. "
                 f"F.rms_norm(x, (dim,), weight, eps) or a norm written in the input dtype); if fp32 is needed for "
                 "accuracy, fuse the upcast into one kernel with torch.compile so the fp32 tensor never reaches memory"),
            severity=severity_for(report, savings),
        ))
    return findings
