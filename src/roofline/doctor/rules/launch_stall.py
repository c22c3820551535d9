"""Kernel launch calls that stall the host again and again while the device sits idle.

Evidence: report.extra["warmup"]'s slow-launches record (analyze/warmup.py), its recurring part: launches of an
op and kernel that took 1 ms or more, and 100x the trace's median launch, more than once, with the device idle for
most of each. A first launch that loads a kernel's code happens once (the warm-up rule names it); a launch that
stalls every time is the driver keeping the host waiting: another thread's call holding it (pinned-memory
allocation by a DataLoader's pin_memory thread, cudaMalloc/cudaFree as the caching allocator grows or empties), or
the launching thread taken off its core.
"""

from __future__ import annotations

from roofline.doctor.evidence import device_runtime, severity_for
from roofline.doctor.registry import register
from roofline.doctor.rules.warm_up import launch_place, slow_launch_method, slow_launches_record
from roofline.report import Finding, Report
from roofline.time_text import fmt_time

RULE = "launch-stall"
FIX = ("find what holds the driver while these launches wait: another thread calling into it at the same time (a "
       "DataLoader's pin_memory thread allocating pinned memory: reuse pinned buffers; cudaMalloc/cudaFree from the "
       "caching allocator growing or torch.cuda.empty_cache(): keep memory reserved, set "
       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True), or the launching thread losing its core (more busy threads "
       "than cores: fewer DataLoader workers, OMP_NUM_THREADS); Nsight Systems' CUDA API and OS runtime rows show "
       "the wait")


@register(RULE, "kernel launch calls that stall the host again and again while the device sits idle")
def check(report: Report) -> list[Finding]:
    found = slow_launches_record(report.extra.get("warmup") or [])
    if found is None or not found.get("recurring_calls"):
        return []
    listed = [e for e in found["launches"] if e["recurring"]]
    longest, excess, calls = listed[0], found["recurring_excess_s"], found["recurring_calls"]
    steps = sorted({e["number"] for e in listed if e.get("number") is not None})
    spread = f" in {len(steps)} step(s)" if steps else ""
    return [Finding(
        rule=RULE, category="host",
        title=f"{calls} kernel launch calls stalled the host {fmt_time(excess)}{spread} while the "
              f"{device_runtime(report)} device sat idle (up to {fmt_time(longest['dur_s'])} in "
              f"{launch_place(longest)}), the same launches again and again",
        evidence={"calls": calls, "excess_s": excess, "median_launch_s": found["median_launch_s"],
                  "longest_s": longest["dur_s"], "call": longest["call"], "op": longest["op"],
                  "kernel": longest["kernel"][:200], "steps": steps},
        locations=list(dict.fromkeys(e["op"] for e in listed if e["op"]))[:5],
        estimated_savings_s=excess,
        savings_method=slow_launch_method(found, "that stalled more than once"),
        fix=FIX, severity=severity_for(report, excess))]
