"""Warm-up inside the profiled window: a one-time start-up cost, named so nobody chases it as a per-step one.

Evidence: report.extra['warmup'] (analyze/warmup.py): runtime calls that carried CUDA's context creation,
profiled steps that are the first iterations, and torch.compile's compilation stages. The saving is not per step:
the fix is to profile steps after the first (a profiler schedule with wait/warmup).
"""

from __future__ import annotations

from roofline.doctor.evidence import device_runtime
from roofline.doctor.registry import register
from roofline.report import Finding, Report

RULE = "warm-up"
FIX = ("profile steady-state steps: torch.profiler.profile(schedule=torch.profiler.schedule(wait=1, warmup=1, "
       "active=3)) and call prof.step() each iteration, or run one warm-up iteration before profiling")


@register(RULE, "the GPU runtime's lazy initialisation, torch.compile's compilation or only the first iterations inside the "
                "profiled window")
def check(report: Report) -> list[Finding]:
    warmup = report.extra.get("warmup") or []
    return _compilation(warmup) + _start_up(report, warmup)


def _compilation(warmup: list[dict]) -> list[Finding]:
    compiled = [e for e in warmup if e.get("kind") == "torch-compile"]
    if not compiled:
        return []
    total, events = sum(e["dur_s"] for e in compiled), sum(e["events"] for e in compiled)
    return [Finding(
        rule=RULE, category="profiling",
        title=f"the profile includes torch.compile's compilation ({total:.3g} s in {events} '(dynamo_timed)' "
              "stage(s)): a one-time cost, not a per-step one; those stages show as unmodelled ops",
        evidence={"time_s": total, "events": events},
        estimated_savings_s=0.0, savings_method="none per step: compilation happens once per input signature",
        fix=FIX, severity="info")]


def _start_up(report: Report, warmup: list[dict]) -> list[Finding]:
    events = [e for e in warmup if e.get("kind") == "cuda-lazy-init"]
    firsts = [e for e in warmup if e.get("kind") == "first-iteration"]
    steps = (report.extra.get("trace") or {}).get("steps") or 0
    if not events and firsts and len(firsts) >= steps:
        numbers = ", ".join(f"#{e['number']}" for e in firsts)
        return [Finding(
            rule=RULE, category="profiling",
            title=f"only the first iteration(s) were profiled (ProfilerStep{numbers}): compilation, autotuning and "
                  "allocator growth happen there, so times may not be the steady state's",
            evidence={"steps": [e["number"] for e in firsts]},
            estimated_savings_s=0.0, savings_method="none per step: warm-up happens once; it is left out of "
                                                     "input-idle",
            fix=FIX, severity="info")]
    if not events:
        return []
    total = sum(e["dur_s"] for e in events)
    calls = sorted({e["call"] for e in events})
    return [Finding(
        rule=RULE, category="profiling",
        title=f"the profile includes {device_runtime(report)}'s lazy initialisation ({total:.3g} s in "
              f"{', '.join(calls)}): a one-time "
              "start-up cost, not a per-step one",
        evidence={"calls": calls, "time_s": total, "events": len(events)},
        estimated_savings_s=0.0,
        savings_method="none per step: the context is created once per process; it is left out of input-idle",
        fix=FIX,
        severity="info",
    )]

