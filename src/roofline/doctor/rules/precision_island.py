"""Precision islands: fp32 work and the casts around it inside a model that otherwise runs in fp16/bf16.

The model's dtype is the dtype of most of its matmul/conv/attention FLOPs. Inside a half model, a run of ops on
float32 tensors (typically entered by a cast up, half -> float, and left by a cast down) moves twice the bytes of
the same work in half, plus the casts' own round trips: e.g. a norm computed in fp32.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from roofline.doctor.evidence import (ATTENTION_KINDS, CONV_KINDS, ELEMENTWISE_KINDS, HALF_DTYPES, MATMUL_KINDS,
                                      VIEW_KINDS, ceilings_by_op, generic_module, has_roofs, input_dtype, is_aten_like,
                                      itemsize, location, op_kind, op_table, output_dtype, severity_for, tensor_inputs,
                                      top_locations)
from roofline.doctor.registry import register
from roofline.report import Ceilings, Finding, OpRecord, Report

RULE = "precision-island"
CAST_KINDS = frozenset({"_to_copy", "to", "type_as", "copy", "_cast_Float", "_cast_Half", "_cast_BFloat16"})
# the optimizer's update and the work on the gradients before it (AMP unscales fp32 gradients by design)
SKIPPED_PHASES = frozenset({"optimizer", "gradient"})


def _first_float(op: OpRecord) -> str | None:
    """A matmul/conv/attention op's first floating input dtype (None for other ops, or without one)."""
    kind = op_kind(op.name)
    if kind not in MATMUL_KINDS and kind not in CONV_KINDS and kind not in ATTENTION_KINDS:
        return None
    floats = [d for _, d, _ in tensor_inputs(op) if d.startswith("float") or d in HALF_DTYPES]
    return floats[0] if floats else None


def model_dtype(report: Report) -> str:
    """The dtype carrying most matmul/conv/attention FLOPs (their count when FLOPs are unknown)."""
    table = op_table(report)
    first_float = table.per_call(_first_float)
    weight: dict[str, float] = defaultdict(float)
    ops, calls = table.ops, table.call
    for i in table.positions(first_float):
        op = ops[i]
        weight[first_float[calls[i]]] += op.flops if op.flops > 0 else 1.0
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
    table = op_table(report)
    kept = [kind not in VIEW_KINDS for kind in table.call_kind]
    is_cast = [kind in CAST_KINDS for kind in table.call_kind]
    computes_fp32 = [not cast and _is_fp32_compute(op) for op, cast in zip(table.calls, is_cast)]
    all_ops, all_calls = table.ops, table.call
    run_order = [i for i in table.run_of(kept) if all_ops[i].phase not in SKIPPED_PHASES]
    ops = [all_ops[i] for i in run_order]
    calls = [all_calls[i] for i in run_order]
    islands: list[list[tuple[OpRecord, str]]] = []
    run: list[tuple[OpRecord, str]] = []
    has_fp32 = False  # whether run holds an fp32 compute op

    def close() -> None:
        nonlocal run, has_fp32
        if has_fp32:
            islands.append(run)
        if run:
            run = []
        has_fp32 = False

    # A cast's direction depends on its call and the next op's: asked once per such pair.
    directions: dict[tuple[int, int | None], str | None] = {}
    last = len(ops) - 1
    for i, op in enumerate(ops):
        c = calls[i]
        direction = None
        if is_cast[c]:
            after = calls[i + 1] if i < last else None
            pair = (c, after)
            if pair in directions:
                direction = directions[pair]
            else:
                direction = directions[pair] = _cast_direction(op, ops[i + 1] if i < last else None, half)
        if direction == "up":
            close()
            run = [(op, "up")]
        elif direction == "down":
            if run:
                run.append((op, "down"))
            close()
        elif direction is None and computes_fp32[c]:
            if run and run[-1][0].step != op.step:
                close()
            run.append((op, "fp32"))
            has_fp32 = True
        else:
            close()
    close()
    return islands


def _fp32_savings(report: Report, op: OpRecord, half: str) -> float:
    return _savings_of(report, half)(op)


def _savings_of(report: Report, half: str) -> Callable[[OpRecord], float]:
    """What computing an fp32 op in ``half`` saves: compute-bound matmuls/convs by the ratio of the compute roofs,
    the rest by the bytes half saves; the factors worked out once for all the ops."""
    def factor_of(c: Ceilings) -> float | None:
        fast, slow = c.peak_for(half), c.peak_for("float32")
        return max(1.0 - slow / fast, 0.0) if fast > 0 and slow > 0 else None

    compute_factor = factor_of(report.ceilings)
    by_op = ceilings_by_op(report)  # GPUs of different models: each op's own roofs
    memory_factor = 1.0 - itemsize(half) / itemsize("float32")

    def saving(op: OpRecord) -> float:
        kind = op_kind(op.name)
        if (kind in MATMUL_KINDS or kind in CONV_KINDS) and op.bound == "compute":
            factor = factor_of(by_op[op.index]) if op.index in by_op else compute_factor
            return op.time_s * factor if factor is not None else 0.0
        return op.time_s * memory_factor

    return saving


@register(RULE, "fp32 ops and cast pairs inside an fp16/bf16 model")
def check(report: Report) -> list[Finding]:
    if not has_roofs(report):
        return []
    half = model_dtype(report)
    if half not in HALF_DTYPES:
        return []
    saving = _savings_of(report, half)
    groups: dict[str, list[list[tuple[OpRecord, str]]]] = defaultdict(list)
    generic: dict[str, str] = {}
    for island in find_islands(report, half):
        first = next(op for op, role in island if role == "fp32")
        where = generic.get(first.module)
        if where is None:
            where = generic[first.module] = generic_module(first.module)
        groups[where or location(first)].append(island)
    findings = []
    for islands in groups.values():
        first = next(op for op, role in islands[0] if role == "fp32")
        where = generic_module(first.module) or location(first)
        casts = [op for isl in islands for op, role in isl if role in ("up", "down")]
        fp32_ops = [op for isl in islands for op, role in isl if role == "fp32"]
        cast_time = sum(op.time_s for op in casts)
        fp32_time = sum(op.time_s for op in fp32_ops)
        savings = cast_time + sum(map(saving, fp32_ops))
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
