"""Input made on the host: tensors built on the CPU and copied to the GPU every step, and the GPU idle at the
start of a step while the host prepares that input.

Evidence: host-to-device memcpy events on the step's device timeline (and the ops that launched them); the gap
between the step's start and its first device event.
"""

from __future__ import annotations

from roofline.doctor.evidence import severity_for, top_locations
from roofline.doctor.registry import register
from roofline.report import Finding, KernelRecord, Report

COPY_RULE = "host-to-device-copy"
IDLE_RULE = "input-idle"
MIN_IDLE_SHARE = 0.1


def is_host_to_device(k: KernelRecord) -> bool:
    name = k.name.lower().replace(" ", "")
    return "htod" in name or "hosttodevice" in name


@register(COPY_RULE, "tensors made on the CPU and copied to the GPU each step")
def check_copies(report: Report) -> list[Finding]:
    copies = [k for k in report.kernels if is_host_to_device(k)]
    if not copies:
        return []
    per_step = len(copies) / max(report.steps, 1)
    time = sum(k.dur_s for k in copies)
    pageable = sum(1 for k in copies if "pageable" in k.name.lower())
    ops = [report.ops[k.op_index] for k in copies if k.op_index is not None and 0 <= k.op_index < len(report.ops)]
    ops += [op for op in report.ops if any(is_host_to_device(KernelRecord(name=n)) for n in op.kernels)
            and op not in ops]
    return [Finding(
        rule=COPY_RULE, category="input",
        title=f"{per_step:g} host-to-device copies per step ({pageable} of {len(copies)} from pageable memory)",
        evidence={"copies": len(copies), "per_step": per_step, "pageable": pageable, "time_s": time},
        locations=top_locations(ops), estimated_savings_s=time,
        savings_method=("the copies' device time on the step's timeline, removed when the tensors are made on the "
                        "device or hidden behind compute with pinned memory and non_blocking=True"),
        fix=("create the tensors on the device (torch.arange/zeros/full(..., device='cuda')) or keep them there across "
             "steps; for real input, use a DataLoader with pin_memory=True and .to('cuda', non_blocking=True), "
             "prefetching the next batch while this one computes"),
        severity=severity_for(report, time),
    )]


@register(IDLE_RULE, "GPU idle at step start while the host prepares input")
def check_idle(report: Report) -> list[Finding]:
    events = sorted(report.kernels, key=lambda k: k.start_s)
    if not events:
        return []
    step_start = float(report.extra.get("step_start_s", 0.0) or 0.0)
    step_end = max(k.start_s + k.dur_s for k in events)
    span = step_end - step_start
    lead = events[0].start_s - step_start
    if span <= 0 or lead <= 0 or lead / span < MIN_IDLE_SHARE:
        return []
    return [Finding(
        rule=IDLE_RULE, category="input",
        title=f"GPU idle for the first {lead / span:.0%} of the step, waiting for the host",
        evidence={"idle_at_start_s": lead, "step_span_s": span, "first_device_event": events[0].name},
        locations=[], estimated_savings_s=lead,
        savings_method="the time from the step's start to its first device event, hidden when input is prepared ahead",
        fix=("prepare the next input while the GPU works: DataLoader workers with pin_memory=True and prefetching, "
             "non_blocking copies, and no host-side preprocessing between steps"),
        severity=severity_for(report, lead),
    )]
