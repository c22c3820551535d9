"""Precision islands: fp32 work and the casts around it inside a model that otherwise runs in fp16/bf16.

The model's dtype is the dtype of most of its matmul/conv/attention FLOPs. Inside a half model, a run of ops on
float32 tensors (typically entered by a cast up, half -> float, and left by a cast down) moves twice the bytes of
the same work in half, plus the casts' own round trips: e.g. an activation function or a Linear computed in fp32.

Not every fp32 region is a mistake. Models upcast some small reductions on purpose, for their numerics: Hugging
Face's RMSNorm computes the variance in fp32, eager attention and MoE routers take the softmax of their scores with
``dtype=torch.float32`` (the router then its topk), rotary embeddings take cos/sin of fp32 angles, losses and
autocast's fp32 ops (layer/group norm, nll_loss) run in fp32. Telling an engineer to drop those upcasts would
change the results (the lab's norms in fp16 diverge from the fp32-norm model within a few dozen tokens). So each
island's fp32 ops are sorted from what the report holds, op kinds and phases, never model names:

- an island holding a matmul/conv/attention in fp32 is an island, all of it (a matmul with an inner dimension of 1,
  an outer product such as rotary embeddings' positions x frequencies, counts as arithmetic);
- otherwise its ops of a numerically sensitive kind (``BY_DESIGN_KINDS``: softmax, norms, reductions, losses,
  topk/sort/histc, cos/sin) and, with them, the plain arithmetic and data movement around them
  (``ARITHMETIC_KINDS``: the norm's pow/add/rsqrt/mul, the router's div by the sum, the angles' mul and cat) are
  fp32 by design; anything else there (an activation, a comparison chain...) is still island work;
- a backward island with no matmul is by design when its module's forward islands all are (a loss's or a norm's
  gradient is plain arithmetic, e.g. mean's backward is a div);
- a backward island of casts up and adds of two same-shaped fp32 operands alone is autograd summing a half gradient
  into an fp32 one, no finding: under autocast an fp32 parameter's weight is cast down in each forward, and with
  gradient accumulation the cast's gradient, upcast, is added to the parameter's fp32 .grad (mixed precision's fp32
  master weights; the user wrote no such cast). Where an fp32 tensor in the forward made it (an fp32 residual
  stream), that forward island is the finding.

Islands with no work left are no finding; the fp32 kept by design is told in one informational line, ranked last
with no estimated savings and its share of the device time (fusing the upcast into the reduction's kernel is what
shrinks it, and unfused-chain estimates that), so the fp32 a user sees in the op table is accounted for.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from roofline.doctor.evidence import (ATTENTION_KINDS, CONV_KINDS, ELEMENTWISE_KINDS, HALF_DTYPES, MATMUL_KINDS,
                                      VIEW_KINDS, ceilings_by_op, device_time_share, generic_module, has_roofs,
                                      input_dtype, is_aten_like, itemsize, location, op_kind, op_table, output_dtype,
                                      severity_for, tensor_inputs, top_locations)
from roofline.doctor.registry import register
from roofline.report import Ceilings, Finding, OpRecord, Report

RULE = "precision-island"
CAST_KINDS = frozenset({"_to_copy", "to", "type_as", "copy", "_cast_Float", "_cast_Half", "_cast_BFloat16"})
# the optimizer's update and the work on the gradients before it (AMP unscales fp32 gradients by design)
SKIPPED_PHASES = frozenset({"optimizer", "gradient"})
HEAVY_KINDS = MATMUL_KINDS | CONV_KINDS | ATTENTION_KINDS
# Ops whose result loses accuracy in half precision (long accumulations, exponentials normalised over a row, orderings
# that pick experts, angles of large positions): models upcast them to fp32 on purpose.
BY_DESIGN_KINDS = frozenset({
    "softmax", "_softmax", "_safe_softmax", "log_softmax", "_log_softmax", "_softmax_backward_data",
    "_log_softmax_backward_data", "logsumexp", "layer_norm", "native_layer_norm", "native_layer_norm_backward",
    "rms_norm", "_fused_rms_norm",
    "_fused_rms_norm_backward", "group_norm", "native_group_norm", "native_group_norm_backward", "batch_norm",
    "native_batch_norm", "native_batch_norm_backward", "_native_batch_norm_legit",
    "_native_batch_norm_legit_no_training", "mean", "sum", "var", "std", "var_mean", "std_mean", "norm",
    "linalg_vector_norm", "amax", "amin", "max", "min", "prod", "cumsum", "cumprod", "nll_loss", "nll_loss_forward",
    "nll_loss_backward", "nll_loss2d_forward", "nll_loss2d_backward", "cross_entropy_loss", "mse_loss",
    "mse_loss_backward", "l1_loss", "smooth_l1_loss", "smooth_l1_loss_backward", "huber_loss", "huber_loss_backward",
    "binary_cross_entropy", "binary_cross_entropy_backward", "binary_cross_entropy_with_logits", "kl_div", "topk",
    "sort", "argsort", "argmax", "argmin", "histc", "bincount", "cos", "sin",
})
# The arithmetic and data movement a by-design op's own computation is written with (the variance's pow, the eps add,
# the rsqrt and the scaling; the mask before a softmax; the angles' mul and cat; a gather before a sum).
ARITHMETIC_KINDS = frozenset({
    "add", "sub", "rsub", "mul", "div", "neg", "pow", "square", "sqrt", "rsqrt", "reciprocal", "exp", "log",
    "clamp", "clamp_min", "clamp_max", "maximum", "minimum", "where", "masked_fill", "fill", "cat", "stack",
    "index", "index_select", "gather", "clone", "copy", "contiguous", "expand", "zeros_like", "ones_like",
    "full_like", "outer",
})
# Filling a tensor (a parameter's initialisation before the model is cast to half, a buffer's reset) computes
# nothing: an island of these alone is the model being built, which a profile of a whole short script includes.
INIT_KINDS = frozenset({"normal", "uniform", "fill", "zero", "random", "exponential", "geometric", "log_normal",
                        "cauchy", "bernoulli"})  # op_kind's names: normal_ is "normal"
_BIAS_FIRST = frozenset({"addmm", "baddbmm", "addbmm", "_addmm_activation"})  # (bias, a, b): the product's a second


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
    # an op whose tensors' dtypes the trace did not record (older Kineto: a cat's tensor list) neither joins nor ends
    unrecorded = [bool(op.input_dtypes) and all(d in ("", "unknown") for d in op.input_dtypes)
                  for op in table.calls]
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
        if direction == "up" and has_fp32 and run[-1][0].step == op.step:
            run.append((op, "up"))  # another operand joins the fp32 region still open (a norm's weight upcast)
        elif direction == "up":
            close()
            run = [(op, "up")]
        elif direction == "down":
            if run:
                run.append((op, "down"))
            close()
        elif direction is None and unrecorded[c] and run:
            continue
        elif direction is None and computes_fp32[c]:
            if run and run[-1][0].step != op.step:
                close()
            run.append((op, "fp32"))
            has_fp32 = True
        elif run:
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


def _is_outer_product(op: OpRecord, kind: str) -> bool:
    """A matmul whose inner dimension is 1 (rotary angles: positions x inverse frequencies): it accumulates nothing,
    a broadcast multiply written as a matmul."""
    if kind not in MATMUL_KINDS:
        return False
    shapes = op.input_shapes[1:] if kind in _BIAS_FIRST else op.input_shapes
    return bool(shapes) and bool(shapes[0]) and shapes[0][-1] == 1


def _fp32_kinds(island: list[tuple[OpRecord, str]]) -> list[str]:
    """The island's fp32 ops' kinds, an outer product's as 'outer' (arithmetic, not a matrix product)."""
    kinds = []
    for op, role in island:
        if role == "fp32":
            kind = op_kind(op.name)
            kinds.append("outer" if _is_outer_product(op, kind) else kind)
    return kinds


def by_design(island: list[tuple[OpRecord, str]], kinds: list[str] | None = None) -> list[bool]:
    """For each fp32 op of ``island`` (in order): whether it is part of a deliberate upcast (module docstring).
    ``kinds``: the island's ``_fp32_kinds``, where already known."""
    kinds = _fp32_kinds(island) if kinds is None else kinds
    if any(kind in HEAVY_KINDS for kind in kinds) or not any(kind in BY_DESIGN_KINDS for kind in kinds):
        return [False] * len(kinds)
    return [kind in BY_DESIGN_KINDS or kind in ARITHMETIC_KINDS for kind in kinds]


def _sums_gradients(island: list[tuple[OpRecord, str]]) -> bool:
    """A backward island of casts up and adds of two same-shaped fp32 tensors only (module docstring)."""
    if island[0][0].phase != "backward":
        return False
    for op, role in island:
        if role == "fp32" and not (op_kind(op.name) == "add" and len(op.input_shapes) >= 2
                                   and op.input_shapes[0] == op.input_shapes[1]
                                   and set(op.input_dtypes[:2]) == {"float32"}):
            return False
        if role == "down":
            return False
    return True


def _sorted_islands(islands: list[list[tuple[OpRecord, str]]], kinds: list[list[str]]) -> list[list[bool]]:
    """by_design of each island of one module, a backward island without a matmul following its forward islands.
    ``kinds``: each island's ``_fp32_kinds``."""
    marks = [by_design(island, fp32) for island, fp32 in zip(islands, kinds)]
    forward = [m for island, m in zip(islands, marks) if island[0][0].phase != "backward"]
    forward_by_design = bool(forward) and all(m and all(m) for m in forward)
    if forward_by_design:
        for k, island in enumerate(islands):
            if island[0][0].phase == "backward" and not any(kind in HEAVY_KINDS for kind in kinds[k]):
                marks[k] = [True] * len(marks[k])
    return marks


@register(RULE, "fp32 ops and cast pairs inside an fp16/bf16 model")
def check(report: Report) -> list[Finding]:
    if not has_roofs(report):
        return []
    half = model_dtype(report)
    if half not in HALF_DTYPES:
        return []
    saving = _savings_of(report, half)
    # per module (or source line): each island there, with its _fp32_kinds
    groups: dict[str, list[tuple[list[tuple[OpRecord, str]], list[str]]]] = defaultdict(list)
    generic: dict[str, str] = {}
    for island in find_islands(report, half):
        kinds = _fp32_kinds(island)
        if all(kind in INIT_KINDS for kind in kinds) or _sums_gradients(island):
            continue
        first = next(op for op, role in island if role == "fp32")
        where = generic.get(first.module)
        if where is None:
            where = generic[first.module] = generic_module(first.module)
        groups[where or location(first)].append((island, kinds))
    findings = []
    kept: list[OpRecord] = []  # the fp32 ops upcast by design, and the casts of the islands holding them
    kept_places: dict[str, float] = {}  # where, and the time kept there
    for entries in groups.values():
        islands = [island for island, _ in entries]
        first = next(op for op, role in islands[0] if role == "fp32")
        where = generic_module(first.module) or location(first)
        marks = _sorted_islands(islands, [kinds for _, kinds in entries])
        fp32_ops, casts, designed, up, down = [], [], [], 0, 0
        for island, mark in zip(islands, marks):
            fp32 = [op for op, role in island if role == "fp32"]
            own_casts = [op for op, role in island if role in ("up", "down")]
            fp32_ops += [op for op, m in zip(fp32, mark) if not m]
            designed += [op for op, m in zip(fp32, mark) if m]
            if any(mark):  # the casts feed the deliberate fp32 work: they stay
                kept += own_casts
            else:
                casts += own_casts
                up += sum(1 for _, role in island if role == "up")
                down += sum(1 for _, role in island if role == "down")
        kept += designed
        if designed:
            kept_places[where] = sum(op.time_s for op in designed)
        if not fp32_ops:
            continue
        n_islands = sum(1 for mark in marks if not all(mark))
        cast_time = sum(op.time_s for op in casts)
        fp32_time = sum(op.time_s for op in fp32_ops)
        savings = cast_time + sum(map(saving, fp32_ops))
        kinds = sorted({op_kind(op.name) for op in fp32_ops})
        cast_sources = top_locations([op for op in casts] or fp32_ops)
        evidence = {"model_dtype": half, "islands": n_islands, "fp32_ops": len(fp32_ops),
                    "fp32_op_kinds": kinds, "casts_up": up, "casts_down": down,
                    "cast_time_s": cast_time, "fp32_time_s": fp32_time}
        if designed:
            evidence["fp32_by_design_ops"] = len(designed)
            evidence["fp32_by_design_kinds"] = _by_design_kinds(designed)
        kept_note = (f" ({', '.join(evidence['fp32_by_design_kinds'][:4])} kept in fp32 by design)"
                     if designed else "")
        findings.append(Finding(
            rule=RULE, category="precision",
            title=(f"fp32 island in a {half} model: {len(fp32_ops)} fp32 ops ({', '.join(kinds[:6])}) x{n_islands} "
                   f"in {where}{kept_note}"),
            evidence=evidence,
            locations=cast_sources + [loc for loc in top_locations(fp32_ops) if loc not in cast_sources][:3],
            estimated_savings_s=savings,
            savings_method=(f"the casts' measured time (removed) + the fp32 ops' time scaled by the bytes {half} saves "
                            f"({itemsize(half)}/{itemsize('float32')} of the traffic at the same bandwidth; "
                            "compute-bound matmuls by the ratio of the fp32 and half compute roofs)"
                            + ("; the ops kept in fp32 by design and their casts count for nothing"
                               if designed else "")),
            fix=(f"compute these ops in {half}: drop the .float()/.to(float32) (or the fp32 parameters/operand that "
                 f"promote them) and the cast back; if fp32 is needed for accuracy, fuse the upcast into one kernel "
                 "with torch.compile so the fp32 tensor never reaches memory"),
            severity=severity_for(report, savings),
        ))
    note = _by_design_note(report, half, kept, kept_places)
    return findings + ([note] if note else [])


def _by_design_kinds(ops: list[OpRecord]) -> list[str]:
    """The by-design kinds among ``ops``, the most time first."""
    time: dict[str, float] = defaultdict(float)
    for op in ops:
        kind = op_kind(op.name)
        if kind in BY_DESIGN_KINDS:
            time[kind] += op.time_s
    return sorted(time, key=lambda kind: (-time[kind], kind))


def _by_design_note(report: Report, half: str, kept: list[OpRecord], time_at: dict[str, float]) -> Finding | None:
    """One informational line for the fp32 kept by design (None without any)."""
    if not kept:
        return None
    time = sum(op.time_s for op in kept)
    share = device_time_share(report, time)
    kinds = _by_design_kinds(kept)
    places = sorted(time_at, key=time_at.get, reverse=True)
    return Finding(
        rule=RULE, category="precision",
        title=(f"fp32 by design in a {half} model, not an island to remove: {', '.join(kinds[:6])} kept for "
               f"accuracy in {', '.join(places[:3])}{' and more' if len(places) > 3 else ''} "
               f"({share:.1%} of device time with their casts)"),
        evidence={"model_dtype": half, "fp32_by_design_kinds": kinds, "places": places, "time_s": time,
                  "share": share, "ops": len(kept)},
        locations=top_locations(kept, limit=5),
        estimated_savings_s=0.0,
        savings_method=(f"none: computing these in {half} would change the results (softmax/topk over scores, a "
                        "norm's variance, a loss or rotary angles lose accuracy in half precision)"),
        fix=("keep them in fp32; what shrinks their time is fusing the upcast, the reduction and the cast back into "
             "one kernel (torch.compile, a fused RMSNorm/softmax kernel), so the fp32 tensor never reaches memory: "
             "see the unfused-chain findings for those modules"),
        severity="info",
    )
