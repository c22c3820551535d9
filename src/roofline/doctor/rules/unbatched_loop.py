"""Sequential work that batching would merge: the same weights applied at batch 1, again and again.

Evidence per matmul call site with fixed weights (linear/mm/addmm), among its batch-1 calls:
- several independent sequences generated one after another: growing runs of rows that restart (no cache), or a
  prefill followed by one-row decode calls, then another prefill (with a cache);
- or, with no generation pattern at all, the same weights applied at batch 1 several times within one step.
Merging k such calls reads the weights once instead of k times; at batch 1 those reads are most of the traffic.
"""

from __future__ import annotations

from roofline.doctor.evidence import (generic_module, has_roofs, input_dtype, matmul_operands, op_bytes,
                                      roofline_time, roofline_time_of, rows, severity_for, tensor_bytes,
                                      top_locations, norm_dtype)
from roofline.doctor.registry import register
from roofline.doctor.rules.recomputation import WEIGHT_KINDS, call_sites, growing_runs
from roofline.report import Finding, OpRecord, Report

RULE = "unbatched-loop"
MIN_SEQUENCES = 2
MIN_REPEATS = 4


def _leading_one(a: list[int]) -> bool:
    return rows(a) == 1 or (len(a) >= 3 and a[0] == 1)


def _sequences(calls: list[tuple[OpRecord, list[int]]]) -> list[list[OpRecord]]:
    """Batch-1 sequences among consecutive calls of one weight.

    Without a cache a sequence is a run of calls whose rows grow by one token per call (a batch of 1), or whose
    activation has a leading batch dimension of 1. With a cache, a prefill (rows > 1) followed by decode calls of
    one row each (batch 1).
    """
    runs = [ops for ops, r, delta in growing_runs(calls) if delta == 1 or len(calls[0][1]) >= 3 and calls[0][1][0] == 1]
    if len(runs) >= MIN_SEQUENCES:
        return runs
    seqs: list[list[OpRecord]] = []
    for op, a in calls:
        if rows(a) == 1 and seqs:
            seqs[-1].append(op)
        else:
            seqs.append([op])
    return [s for s in seqs if len(s) >= 2]


def _by_step(calls: list[tuple[OpRecord, list[int]]]) -> list[list[tuple[OpRecord, list[int]]]]:
    groups: dict[int | None, list[tuple[OpRecord, list[int]]]] = {}
    for call in calls:
        groups.setdefault(call[0].step, []).append(call)
    return list(groups.values())


def merge_groups(calls: list[tuple[OpRecord, list[int]]]) -> tuple[str, list[list[list[OpRecord]]]]:
    """('generation' | 'repeat' | '', groups): each group is a list of sequences whose j-th calls batching merges.

    Sequences are looked for within one profiled step (a step repeating the same work is not a batch to merge);
    when every step holds a single call (one forward per step), across steps.
    """
    steps = _by_step(calls)
    windows = [calls] if all(len(s) == 1 for s in steps) else steps
    groups = [seqs for w in windows if len(seqs := _sequences(w)) >= MIN_SEQUENCES]
    if groups:
        return "generation", groups
    repeats = [[[op] for op, _ in w] for w in steps
               if len(w) >= MIN_REPEATS and all(_leading_one(a) and a == w[0][1] for _, a in w)]
    if repeats:
        return "repeat", repeats
    return "", []


def _merged_time(report: Report, seqs: list[list[OpRecord]]) -> float:
    """Roofline time when call j of every sequence runs as one call: weights read once per merged call."""
    op0 = seqs[0][0]
    _, b, _, b_i = matmul_operands(op0)
    dtype = norm_dtype(op0.dtype) or input_dtype(op0, b_i) or "float32"
    weight = tensor_bytes(b, input_dtype(op0, b_i) or dtype)
    total = 0.0
    for j in range(max(len(s) for s in seqs)):
        at_j = [s[j] for s in seqs if j < len(s)]
        flops = sum(op.flops for op in at_j)
        nbytes = weight + sum(max(op_bytes(op) - weight, 0.0) for op in at_j)
        total += roofline_time_of(report, flops, nbytes, dtype, at_j[0])
    return total


def _savings(report: Report, groups: list[list[list[OpRecord]]]) -> float:
    """Per group: the per-call overhead paid once per merged call instead of once per call, plus the rest of the
    calls' time scaled by the roofline ratio merged / separate (weights read once per merged call)."""
    overhead = report.ceilings.launch_overhead_s
    saved = 0.0
    for seqs in groups:
        ops = [op for s in seqs for op in s]
        merged_calls = max(len(s) for s in seqs)
        fixed = [min(op.time_s, overhead) for op in ops]
        work = sum(op.time_s for op in ops) - sum(fixed)
        saved += max(sum(fixed) - merged_calls * overhead, 0.0)
        separate = sum(roofline_time(report, op) for op in ops)
        if separate > 0:
            saved += work * max(1.0 - _merged_time(report, seqs) / separate, 0.0)
    return saved


@register(RULE, "batch-1 matmuls with the same weights repeated in a loop")
def check(report: Report) -> list[Finding]:
    hits = []
    for site, calls in call_sites(report).items():
        # forward calls only: a backward weight gradient of a layer with one output feature is a [1, n] matmul,
        # repeated once per forward, which an optimizer evaluating its closure several times a step (LBFGS) made
        # look like a batch-1 loop
        calls = [call for call in calls if call[0].phase == "forward"]
        if site[2] in WEIGHT_KINDS and calls:
            pattern, groups = merge_groups(calls)
            if pattern:
                hits.append((site, pattern, groups))
    if not hits:
        return []
    ops = [op for _, _, groups in hits for seqs in groups for s in seqs for op in s]
    time = sum(op.time_s for op in ops)
    if has_roofs(report):
        savings = sum(_savings(report, groups) for _, _, groups in hits)
        method = ("merging call j of every sequence into one call: the per-call launch overhead is paid once per "
                  "merged call, and the rest of the batch-1 calls' measured time shrinks by the roofline ratio merged / "
                  "separate (weights read once per merged call; same efficiency as now; padding ignored); only the "
                  "weight matmuls are counted, so a lower bound")
    else:
        savings, method = 0.0, "not estimated: the report has no ceilings to place merged calls on the roofline"
    generation = [h for h in hits if h[1] == "generation"]
    n_seq = max((len(seqs) for _, _, groups in generation for seqs in groups), default=0)
    modules = sorted({generic_module(site[0]) for site, _, _ in hits if site[0]})
    if generation:
        title = (f"{n_seq} sequences generated one at a time at batch 1 through {len(hits)} weight matmuls: "
                 "batch them")
        fix = ("generate the prompts as one batch (pad to a common length with an attention mask, or use per-row "
               "positions), so each weight is read once per step for all sequences")
    else:
        repeats = max(len(seqs) for _, _, groups in hits for seqs in groups)
        title = (f"the same weights applied at batch 1 up to {repeats} times in one step ({len(hits)} matmul sites): "
                 "batch the loop")
        fix = "stack the loop's inputs into one batch and apply the layer once (torch.stack / torch.cat, or torch.vmap)"
    return [Finding(
        rule=RULE, category="batching", title=title,
        evidence={"call_sites": len(hits), "sequences": n_seq, "calls": len(ops), "time_s": time,
                  "pattern": "generation" if generation else "repeat", "modules": modules[:8]},
        locations=top_locations(ops), estimated_savings_s=savings, savings_method=method, fix=fix,
        severity=severity_for(report, savings),
    )]
