"""Exposed communication: collectives that run while no compute does, so every step waits for them.

Evidence: the merged report's per-rank split (``ranks``). The least-exposed rank's figure is the one taken:
on the other ranks part of the exposed time is waiting for a slower rank (the straggler rule's business),
while the least-exposed rank waited least, so its exposed time is the transfer itself.
"""

from __future__ import annotations

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
        return []
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
