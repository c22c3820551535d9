"""Input made on the host: tensors built on the CPU and copied to the GPU every step, and the GPU idle at the
start of a step while the host prepares that input.

Evidence: host-to-device memcpy events on the step's device timeline (and the ops that launched them); the gap
between the step's start and its first device event.

A copy from pageable memory blocks the host until the device has drained its queue and made the copy: the sync
detector records it as a "copy to device" sync site. That stall and the copy's device time are one cost, removed by
one fix (tensors made on the device, or pinned and non_blocking), so this rule owns both: its saving is the larger
of the copies' device time and the stall at those sites (they overlap: the host waits while the copy runs), and the
host-device-sync rule leaves those sites out. Three findings once claimed 1.77 ms against 853 us of copy time.
In a trace without steps, the copies made before the first compute kernel and never again are one-time set-up (the
model's weights moved to the device), an info line without saving (``one_time_uploads``).
"""

from __future__ import annotations

import functools

import numpy as np

from roofline.capture.trace_syncs import COPY_TO_DEVICE, copy_direction
from roofline.doctor.evidence import (device_runtime, is_gpu_report, op_table, severity_for, step_spans, top_locations,
                                      torch_device)
from roofline.doctor.registry import register
from roofline.report import Finding, KernelRecord, OpRecord, Report
from roofline.time_text import fmt_time

COPY_RULE = "host-to-device-copy"
IDLE_RULE = "input-idle"
MIN_IDLE_SHARE = 0.1


def is_host_to_device(k: KernelRecord) -> bool:
    return _names_host_to_device(k.name)


@functools.lru_cache(maxsize=8192)
def _names_host_to_device(name: str) -> bool:
    """CUDA "Memcpy HtoD", ROCm "HostToDevice", Intel PTI "Memcpy M2D"/"H2D" (capture/trace_syncs.copy_direction);
    memoised: a trace's few hundred device event names recur on every step."""
    return copy_direction(name) == "device"


def host_copies_reported(report: Report) -> bool:
    """Whether this rule speaks for the step's host-to-device copies (and so for their blocking syncs)."""
    return any(_names_host_to_device(k.name) for k in report.kernels)


@register(COPY_RULE, "tensors made on the CPU and copied to the GPU each step")
def check_copies(report: Report) -> list[Finding]:
    copies = [k for k in report.kernels if _names_host_to_device(k.name)]
    if not copies:
        return []
    blocking = [site for site in report.syncs if site.kind == COPY_TO_DEVICE and site.count > 0]
    once = one_time_uploads(report, copies)
    once_ids = {id(k) for k in once}
    repeated = [k for k in copies if id(k) not in once_ids]
    setup_ops = {id(op) for op in _copy_ops(report, once)}
    findings = [_per_step_copies(report, repeated, blocking, setup_ops)] if repeated else []
    if once:
        findings.append(_one_time_upload(report, once, [] if repeated else blocking))
    return findings


def one_time_uploads(report: Report, copies: list[KernelRecord]) -> list[KernelRecord]:
    """The copies of a trace without steps that ran before its first compute kernel and were not made again
    after it: the model's weights moved to the device (module.to('cuda'), one copy per parameter) and other set-up
    of the run, not input fed to each forward. A later copy by an op of the same name and input shapes (the next
    batch) makes an early one input; without recorded shapes any later copy does. With steps, every copy in them is
    the step's (set-up before the first step is outside the report)."""
    if any(op.step is not None for op in report.ops):
        return []
    compute = [k.start_s for k in report.kernels if k.category == "kernel"]
    if not compute:
        return []
    first = min(compute)
    later = {_copy_signature(report, k) for k in copies if k.start_s >= first}
    return [k for k in copies if k.start_s < first and _copy_signature(report, k) not in later]


def _copy_signature(report: Report, k: KernelRecord) -> tuple:
    op = report.ops[k.op_index] if k.op_index is not None and 0 <= k.op_index < len(report.ops) else None
    return (op.name, repr(op.input_shapes)) if op is not None else ("", "")


def _copy_ops(report: Report, copies: list[KernelRecord]) -> list[OpRecord]:
    return [report.ops[k.op_index] for k in copies if k.op_index is not None and 0 <= k.op_index < len(report.ops)]


def _per_step_copies(report: Report, copies: list[KernelRecord], blocking: list, setup_ops: set[int]) -> Finding:
    """``setup_ops``: ids of the ops that made the one-time uploads, left out of the locations."""
    per_step = len(copies) / max(report.steps, 1)
    copy_time = sum(k.dur_s for k in copies)
    stall = sum(max(site.stall_s, 0.0) for site in blocking)
    time = max(copy_time, stall)
    # PTI's M2D: from memory the runtime did not allocate (plain malloc'd, pageable) rather than USM host memory
    device = torch_device(report)
    pageable = sum(1 for k in copies if _from_pageable(k))
    ops = _copy_ops(report, copies)
    ops += [op for op in report.ops if op.kernels and any(map(_names_host_to_device, op.kernels)) and op not in ops
            and id(op) not in setup_ops]
    return Finding(
        rule=COPY_RULE, category="input",
        title=f"{per_step:g} host-to-device copies per step ({pageable} of {len(copies)} from pageable memory)",
        evidence={"copies": len(copies), "per_step": per_step, "pageable": pageable, "time_s": copy_time,
                  "blocking_copies": sum(site.count for site in blocking), "host_stall_s": stall},
        locations=top_locations(ops), estimated_savings_s=time,
        savings_method=("the copies' device time on the step's timeline"
                        + (", or the host's stall in the blocking ones (the sync detector's, at its 'copy to "
                           "device' sites) where larger: they overlap" if blocking else "")
                        + ", removed when the tensors are made on the device or hidden behind compute with pinned "
                          "memory and non_blocking=True"),
        fix=(f"create the tensors on the device (torch.arange/zeros/full(..., device='{device}')) or keep them there "
             f"across steps; for real input, use a DataLoader with pin_memory=True and .to('{device}', "
             "non_blocking=True), prefetching the next batch while this one computes"),
        severity=severity_for(report, time),
    )


def _from_pageable(k: KernelRecord) -> bool:
    return "pageable" in k.name.lower() or k.name.lower().startswith("memcpy m2d")


def _one_time_upload(report: Report, copies: list[KernelRecord], blocking: list) -> Finding:
    """An info line, no saving: the upload is paid once per process, not per step."""
    copy_time = sum(k.dur_s for k in copies)
    stall = sum(max(site.stall_s, 0.0) for site in blocking)
    return Finding(
        rule=COPY_RULE, category="input", severity="info",
        title=(f"{len(copies)} host-to-device copies ({fmt_time(copy_time)}) ran once, before the first compute "
               "kernel, and were not repeated: one-time set-up (the model's weights moved to the device), not "
               "input copied each step"),
        evidence={"copies": len(copies), "one_time": True, "time_s": copy_time,
                  "pageable": sum(1 for k in copies if _from_pageable(k)), "host_stall_s": stall},
        locations=top_locations(_copy_ops(report, copies)), estimated_savings_s=0.0,
        savings_method=("none per step: copies made before the trace's first compute kernel and not made again "
                        "(no later copy by an op of the same name and input shapes), in a trace without steps, are "
                        "paid once per process"),
        fix=("nothing per step. If the loop does copy input each step, profile several steps "
             "(torch.profiler.schedule and prof.step()) so that the copies show in each step"),
    )


def _warmup_in(report: Report, step: int | None, end: float) -> float:
    """Time of CUDA lazy initialisation (analyze/warmup.py) inside [0, end) of a step's clock."""
    spent = 0.0
    for e in report.extra.get("warmup") or []:
        if e.get("step") == step and e.get("kind") == "cuda-lazy-init":
            spent += max(0.0, min(e["start_s"] + e["dur_s"], end) - max(e["start_s"], 0.0))
    return spent


def _profiler_in(report: Report, step: int | None, end: float) -> float:
    """Host time in the profiler's own code (roofline's step and phase hooks, torch.profiler's: report.extra
    "profiler_time", from capture/tool_frames.py) inside [0, end) of a step's clock."""
    return sum(max(0.0, min(e["start_s"] + e["dur_s"], end) - max(e["start_s"], 0.0))
               for e in report.extra.get("profiler_time") or [] if e.get("step") == step)


def _step_window(report: Report, step: int | None) -> float | None:
    """The step's wall span (report.extra "step_windows_s", by trace step, from analyze/attribution.step_windows),
    where the report has it. The ops' host span is not one: their last may end long before the step does, which
    made a GPU idle for 80% of its step read as idle for 100% of it."""
    windows = report.extra.get("step_windows_s") or []
    return windows[step] if step is not None and 0 <= step < len(windows) else None


def _first_device_work(report: Report, step: int | None, device: int | None) -> float | None:
    """When the GPU (``device``; None: any) first worked in the step, on the step's clock (report.extra
    "step_first_device_work_s", from analyze/attribution.py: any kernel, memcpy or memset in the step's window,
    whether or not an op claims it); None where the report does not have it or the GPU did nothing."""
    by_step = report.extra.get("step_first_device_work_s") or []
    if step is None or not 0 <= step < len(by_step) or not isinstance(by_step[step], dict):
        return None
    offsets = [s for d, s in by_step[step].items() if device is None or d == str(device)]
    return min(offsets) if offsets else None


def _step_leads(report: Report, launched: np.ndarray | None = None,
                device: int | None = None) -> list[tuple[float, float, OpRecord]]:
    """Per step: (host time from the step's start to the first op that launched device work, less any CUDA lazy
    initialisation and the profiler's own code in it, step span, that op). The step span: the measured step time,
    else the step's window in the trace, else its ops' host span. The first iterations (warm-up) are left
    out. ``launched``: which ops count as launching (by default every op with kernels; one GPU's ops for that GPU's
    lead, ``device``). The lead ends earlier where the GPU worked before that op's launch (work queued by an
    earlier step, or launched by calls the trace lost): a GPU busy at the step's start does not wait for input."""
    measured = report.profiled_step_time.median_s if report.profiled_step_time else 0.0
    spans = step_spans(report)
    table = op_table(report)
    start = table.floats("start_s")
    if launched is None:
        launched = table.has_kernels()
    leads = []
    warmup_steps = {e.get("step") for e in report.extra.get("warmup") or [] if e.get("kind") == "first-iteration"}
    for g, step in enumerate(spans.steps):
        if step is not None and step in warmup_steps:
            continue
        ops = spans.positions[spans.bounds[g]:spans.bounds[g + 1]]
        launching = ops[launched[ops]]
        if not len(launching):
            continue
        first = table.ops[int(launching[np.argmin(start[launching])])]  # the earliest, the first of equals
        span = measured or _step_window(report, step) or float(spans.latest_end[g])
        if span > 0:
            lead = min(max(first.start_s, 0.0), span)
            worked = _first_device_work(report, step, device)
            if worked is not None:
                lead = min(lead, max(worked, 0.0))
            own = _warmup_in(report, first.step, lead) + _profiler_in(report, first.step, lead)
            leads.append((max(lead - own, 0.0), span, first))
    return leads


@register(IDLE_RULE, "GPU idle at step start while the host prepares input")
def check_idle(report: Report) -> list[Finding]:
    if not is_gpu_report(report):
        return []
    leads, device = _worst_gpu_leads(report)
    if not leads:
        return []
    lead = sum(lead for lead, _, _ in leads) / len(leads)
    span = sum(span for _, span, _ in leads) / len(leads)
    if lead / span < MIN_IDLE_SHARE:
        return []
    firsts = [op for _, _, op in leads]
    gpu = f"GPU {device}" if device is not None else "GPU"
    title = f"{gpu} idle for the first {lead / span:.0%} of each step while the host prepares work"
    fix = ("prepare the next input while the GPU works: DataLoader workers with pin_memory=True and prefetching, "
           "non_blocking copies, no host-side preprocessing between steps; make tensors on the device")
    evidence = {"idle_at_start_s": lead, "step_span_s": span, "steps": len(leads), "first_device_op": firsts[0].name}
    profiler = sum(_profiler_in(report, op.step, max(op.start_s, 0.0)) for op in firsts)
    if profiler > 0:
        evidence["profiler_time_left_out_s"] = profiler
    if device is not None:
        # Until the host launches any GPU's first work it prepares input; after that this GPU waits while the host
        # issues other GPUs' work first (model or pipeline parallel run in turn), which input prefetching won't fix.
        any_gpu = _step_leads(report)
        before_any = sum(l for l, _, _ in any_gpu) / len(any_gpu) if any_gpu else 0.0
        evidence.update(device=device, idle_before_any_gpu_work_s=before_any)
        if before_any < lead:
            title = (f"{gpu} idle for the first {lead / span:.0%} of each step: {before_any / span:.0%} while the "
                     "host prepares work, the rest while it issues the other GPUs' work first")
            fix += ("; with several GPUs in one process, start each GPU's work as early as possible (split the batch "
                    "into micro-batches so the GPUs work at once, as pipeline parallelism does)")
    return [Finding(
        rule=IDLE_RULE, category="input", title=title, evidence=evidence,
        locations=top_locations(firsts), estimated_savings_s=sum(l for l, _, _ in leads),
        savings_method=("host time from each step's start to the first op that launched device work"
                        + (f" on GPU {device}" if device is not None else "") +
                        " (or to the GPU's first work in the step, where work queued earlier ran before it)" +
                        f" (nothing is queued on the GPU before it), less {device_runtime(report)}'s lazy "
                        "initialisation and the profiler's own code, hidden when the next input is prepared ahead"),
        fix=fix,
        severity=severity_for(report, sum(l for l, _, _ in leads)),
    )]


def _worst_gpu_leads(report: Report) -> tuple[list[tuple[float, float, OpRecord]], int | None]:
    """The step leads of the GPU that waits longest for its first work, with its device id when one process drove
    several GPUs (each GPU waits for its own first kernel: another GPU's work does not keep it busy)."""
    kernels = report.kernels
    if len({k.device for k in kernels if k.op_index is not None} - {None}) < 2:
        return _step_leads(report), None
    devices: dict[int, set[int]] = {}
    for k in kernels:
        if k.device is not None and k.op_index is not None:
            devices.setdefault(k.device, set()).add(k.op_index)
    n = len(report.ops)
    best: tuple[float, list, int | None] = (-1.0, [], None)
    for device, ops in sorted(devices.items()):
        mask = np.zeros(n, dtype=bool)
        mask[[i for i in ops if 0 <= i < n]] = True
        leads = _step_leads(report, mask, device)
        if leads:
            share = sum(lead for lead, _, _ in leads) / sum(span for _, span, _ in leads)
            if share > best[0]:
                best = (share, leads, device)
    return best[1], best[2]
