"""CUDA lazy initialisation inside the profiled window: a one-time start-up cost, named so nobody chases it.

Evidence: report.extra['warmup'] (analyze/warmup.py): runtime calls that carried the context creation. The
saving is not per step: the fix is to profile steps after the first (a profiler schedule with wait/warmup).
"""

from __future__ import annotations

from roofline.doctor.registry import register
from roofline.report import Finding, Report

RULE = "warm-up"


@register(RULE, "CUDA lazy initialisation inside the profiled window")
def check(report: Report) -> list[Finding]:
    events = [e for e in report.extra.get("warmup") or [] if e.get("kind") == "cuda-lazy-init"]
    if not events:
        return []
    total = sum(e["dur_s"] for e in events)
    calls = sorted({e["call"] for e in events})
    return [Finding(
        rule=RULE, category="profiling",
        title=f"the profile includes CUDA's lazy initialisation ({total:.3g} s in {', '.join(calls)}): a one-time "
              "start-up cost, not a per-step one",
        evidence={"calls": calls, "time_s": total, "events": len(events)},
        estimated_savings_s=0.0,
        savings_method="none per step: the context is created once per process; it is left out of input-idle",
        fix=("profile steady-state steps: torch.profiler.profile(schedule=torch.profiler.schedule(wait=1, warmup=1, "
             "active=3)) and call prof.step() each iteration, or run one warm-up iteration before profiling"),
        severity="info",
    )]
