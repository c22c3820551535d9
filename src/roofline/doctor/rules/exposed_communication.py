"""Exposed communication: collectives that run while no compute does, so every step waits for them.

Evidence: the merged report's per-rank split (``ranks``). The least-exposed rank's figure is the one taken:
on the other ranks part of the exposed time is waiting for a slower rank (the straggler rule's business),
while the least-exposed rank waited least, so its exposed time is the transfer itself.

A report of one rank carries that rank's own row (analyze/rank_timeline.py: NCCL kernels against the other device
work on a GPU, gloo's spans against the host's ops on the CPU): its exposed time is judged too, said to include any
wait for slower ranks, which only the traces of all ranks together can tell from the transfer.
"""

from __future__ import annotations

from roofline.analyze.communication import is_communication_op
from roofline.doctor.distributed_evidence import distributed_info, median_step_s, profiled_steps, step_severity
from roofline.doctor.registry import register
from roofline.report import Finding, Report

RULE = "exposed-communication"
MIN_SHARE = 0.05

FIX = ("overlap communication with compute: with DDP keep find_unused_parameters=False and static_graph=True "
       "where the graph allows, set gradient_as_bucket_view=True, and lower bucket_cap_mb so the first all-reduce "
       "starts earlier in backward; with FSDP enable backward_prefetch/forward_prefetch; remove host syncs "
       "(.item(), barriers) between backward and the optimizer; accumulate gradients under no_sync() so fewer "
       "steps communicate")


@register(RULE, "collectives not hidden under compute (every rank waits for them)")
def check(report: Report) -> list[Finding]:
    info = distributed_info(report)
    if info is None:
        return _one_rank(report)
    rows = [r for r in report.ranks if r.exposed_communication_s is not None]
    if not rows:
        return []
    least = min(rows, key=lambda r: r.exposed_communication_s)
    exposed = least.exposed_communication_s
    step = median_step_s(report)
    if step <= 0 or exposed / step < MIN_SHARE:
        return []
    hidden = [r.hidden_communication_share for r in rows if r.hidden_communication_share is not None]
    comm = least.communication_time_s or 0.0
    steps = profiled_steps(report)
    return [Finding(
        rule=RULE, category="communication",
        title=(f"exposed communication: {exposed * 1e3:.3g} ms per step ({exposed / step:.0%} of the step) with no "
               f"compute running, even on the least-exposed rank (rank {least.rank})"),
        evidence={"exposed_communication_s": exposed, "communication_time_s": comm, "step_time_s": step,
                  "rank": least.rank, "hidden_share_by_rank": {str(r.rank): r.hidden_communication_share
                                                               for r in rows},
                  "min_hidden_share": min(hidden) if hidden else None, "backend": info.backend},
        locations=[c.example for c in info.collectives[:3] if c.example],
        estimated_savings_s=exposed * steps,
        savings_method=(f"the least-exposed rank's communication time with no compute beside it, per step, times "
                        f"{steps:g} profiled steps: the most that overlapping it with compute could save"),
        fix=FIX, severity=step_severity(exposed, step),
    )]


ONE_RANK_CAVEAT = ("one rank's trace cannot tell the transfer from waiting for a slower rank: pass every rank's trace "
                   "to `roofline trace` (or `roofline merge` a run directory) for the split and any straggler")


def _one_rank(report: Report) -> list[Finding]:
    """The finding from a one-rank report's own row (none for a merged report's base, which has no row)."""
    if report.distributed is not None or len(report.ranks) != 1:
        return []
    row = report.ranks[0]
    exposed, step = row.exposed_communication_s, row.step_time_s
    if step <= 0 or exposed / step < MIN_SHARE:
        return []
    steps = float(row.profiled_steps or max(report.steps, 1))
    backend = report.environment.backend
    calls = sorted({op.name for op in report.ops if is_communication_op(op.name)})
    beside = "no other kernel" if report.kernels else "no op"
    return [Finding(
        rule=RULE, category="communication",
        title=(f"exposed communication: {exposed * 1e3:.3g} ms per step ({exposed / step:.0%} of the step) in "
               f"{backend + ' ' if backend else ''}collectives with {beside} running beside them on this rank "
               f"(rank {row.rank}; one rank's trace: this includes any wait for slower ranks)"),
        evidence={"exposed_communication_s": exposed, "communication_time_s": row.communication_time_s,
                  "step_time_s": step, "rank": row.rank, "hidden_share": row.hidden_communication_share,
                  "collectives_per_step": row.collectives_per_step, "backend": backend, "ranks_traced": 1},
        locations=calls[:3],
        estimated_savings_s=exposed * steps,
        savings_method=(f"this rank's communication time with {beside} beside it, per step, times {steps:g} profiled "
                        "steps: the most that overlapping it with compute could save (less whatever of it was "
                        "waiting for slower ranks, which overlap cannot remove)"),
        fix=f"{FIX}; {ONE_RANK_CAVEAT}", severity=step_severity(exposed, step),
    )]
