"""Many tiny collectives: messages so small that each call costs its fixed latency, not bandwidth.

Evidence: the merge's collectives (kind, size, calls per step, time). Tiny = under 1 MiB. The saving is their
time less what one coalesced call of the same bytes would take at the best bus bandwidth seen (measured ceiling,
else the best call in the job) plus one call's latency.
"""

from __future__ import annotations

from roofline.doctor.distributed_evidence import distributed_info, median_step_s, profiled_steps, step_severity
from roofline.doctor.registry import register
from roofline.report import DistributedInfo, Finding, Report

RULE = "tiny-collectives"
TINY_BYTES = 1 << 20
MIN_CALLS_PER_STEP = 8
MIN_SHARE = 0.02

FIX = ("send fewer, larger messages: raise DDP's bucket_cap_mb (or keep gradients in one flat buffer), coalesce "
       "small tensors before all_reduce (torch.cat / a flat parameter), wrap larger FSDP units, and accumulate "
       "gradients under no_sync() so only every N-th step communicates")


@register(RULE, "many small collectives, each paying a fixed latency")
def check(report: Report) -> list[Finding]:
    info = distributed_info(report)
    if info is None:
        return []
    rows = [c for c in info.collectives if c.bytes and c.bytes < TINY_BYTES]
    calls = sum(c.calls_per_step for c in rows)
    if calls < MIN_CALLS_PER_STEP:
        return []
    spent = sum(c.total_time_per_step_s for c in rows)
    step = median_step_s(report)
    if step <= 0 or spent / step < MIN_SHARE:
        return []
    total_bytes = sum(c.bytes * c.calls_per_step for c in rows)
    best_bw, bw_source = _best_bandwidth(info)
    latency = min(c.time_s for c in rows)
    coalesced = latency + (total_bytes / best_bw if best_bw else 0.0)
    saving = max(spent - coalesced, 0.0)
    steps = profiled_steps(report)
    kinds = sorted({c.kind for c in rows})
    return [Finding(
        rule=RULE, category="communication",
        title=(f"{calls:g} tiny collectives per step ({', '.join(kinds)}, under 1 MiB each) take "
               f"{spent * 1e3:.3g} ms per step ({spent / step:.0%})"),
        evidence={"calls_per_step": calls, "time_per_step_s": spent, "bytes_per_step": total_bytes,
                  "smallest_call_time_s": latency, "bandwidth_bytes_per_s": best_bw, "bandwidth_source": bw_source,
                  "sizes": sorted({c.bytes for c in rows})[:12]},
        locations=[c.example for c in rows[:3]],
        estimated_savings_s=saving * steps,
        savings_method=("their time per step less one coalesced call (the fastest call's latency plus all their bytes "
                        f"at {bw_source}), times {steps:g} profiled steps"),
        fix=FIX, severity=step_severity(saving, step),
    )]


def _best_bandwidth(info: DistributedInfo) -> tuple[float | None, str]:
    ceiling = info.collective_ceiling
    peak = ceiling.peak_busbw_bytes_per_s.get("all_reduce") if ceiling is not None else None
    if peak:
        return float(peak), "the measured all-reduce bus bandwidth"
    seen = [c.algbw_bytes_per_s for c in info.collectives if c.algbw_bytes_per_s]
    return (max(seen), "the best bandwidth among this job's calls") if seen else (None, "no bandwidth known")
