"""Stragglers: ranks whose own work per step exceeds the median rank's, so every other rank waits for them in
the next collective. The merge finds them (busy time = step less exposed communication) and names the op or
host call where the straggler spends the most time beyond the other ranks."""

from __future__ import annotations

from roofline.doctor.distributed_evidence import distributed_info, median_step_s, profiled_steps, step_severity
from roofline.doctor.registry import register
from roofline.report import Finding, Report

RULE = "straggler"

FIX = ("give every rank the same work: equal batch sizes and sequence lengths per rank (bucket by length), the same "
       "data-loader workers; move rank-specific work (logging, checkpointing, evaluation on rank 0) off the step or "
       "make it asynchronous; check the slow rank's host and GPU for other load (clocks, thermal throttling)")


@register(RULE, "ranks slower than the median rank, which the others wait for")
def check(report: Report) -> list[Finding]:
    info = distributed_info(report)
    if info is None:
        return []
    step = median_step_s(report)
    steps = profiled_steps(report)
    findings = []
    for s in info.stragglers:
        cause = s.slowest_op
        excess, busy, median = s.excess_s, s.busy_time_s, s.median_busy_time_s
        findings.append(Finding(
            rule=RULE, category="distributed",
            title=(f"straggler: rank {s.rank} works {excess * 1e3:.3g} ms per step longer than the other ranks "
                   f"(median; {busy * 1e3:.3g} vs {median * 1e3:.3g} ms)" + (f"; slowest: {cause}" if cause else "")),
            evidence={"rank": s.rank, "busy_time_s": busy, "median_busy_time_s": median, "excess_s": excess,
                      "slowest_op": cause, "slowest_op_excess_s": s.slowest_op_excess_s,
                      "threshold": info.straggler_threshold, "method": info.straggler_method},
            locations=[cause] if cause else [],
            estimated_savings_s=excess * steps,
            savings_method=(f"the straggler's busy time above the other ranks' median, per step, times {steps:g} profiled "
                            "steps: the other ranks wait that long in the next collective"),
            fix=FIX, severity=step_severity(excess, step),
        ))
    return findings
