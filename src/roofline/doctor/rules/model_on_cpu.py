"""The model ran on the CPU though a GPU is present: `.to("cuda")` forgotten for the model or its inputs, or CPU
training by choice (the finding says it may be deliberate).

Evidence: report.extra['unused_gpu'] (analyze/unused_gpu.py): no device activity in the profiled steps, on a
machine (or in a trace) with a GPU. The saving is each op's CPU time less what it would take on that GPU: the
larger of its time at the GPU's roofs (report.extra['unused_gpu']['roofs'], measured or datasheet) and one kernel
launch, for ops with counted work; ops with none (views, bookkeeping) cost the host the same on either device. The
copy of each step's inputs to the GPU and the GPU's lower efficiency on small ops are left out: an upper bound.
"""

from __future__ import annotations

from roofline.analyze.trace_file import ASSUMED_LAUNCH_S
from roofline.doctor.evidence import severity_for, top_locations
from roofline.doctor.registry import register
from roofline.report import Finding, OpRecord, Report

RULE = "model-on-cpu"
FIX = ("if the CPU is not deliberate, move the model and its inputs to the GPU: model.to('{device}') once, and "
       "each batch with x.to('{device}', non_blocking=True) (a DataLoader with pin_memory=True); "
       "torch.autocast('{device}') for mixed precision")


@register(RULE, "the model ran on the CPU though a GPU is present (.to(device) forgotten?)")
def check(report: Report) -> list[Finding]:
    unused = report.extra.get("unused_gpu")
    if not isinstance(unused, dict) or not report.ops:
        return []
    name = unused.get("name") or "a GPU"
    device = str(unused.get("device") or "cuda")  # reports written before it was kept: CUDA's
    roofs = unused.get("roofs") if isinstance(unused.get("roofs"), dict) else None
    worked = [op for op in report.ops if op.flops > 0 or op.bytes > 0]
    cpu_time = sum(op.time_s for op in report.ops)
    if roofs:
        launch = float(roofs.get("launch_overhead_s") or ASSUMED_LAUNCH_S)
        savings = sum(max(op.time_s - _gpu_time(op, roofs, launch), 0.0) for op in worked)
        method = (f"each op with counted work ({len(worked)} of {len(report.ops)}): its CPU time less the larger of "
                  f"its time at the {name}'s roofs ({roofs.get('source', 'measured')}) and one launch "
                  f"({launch * 1e6:.3g} us); ops without counted work unchanged; the inputs' copy to the GPU and "
                  "small kernels' lower efficiency are left out: an upper bound")
    else:
        savings, method = 0.0, f"not estimated: no roofs are known for the {name}"
    return [Finding(
        rule=RULE, category="placement",
        title=f"the model ran on the CPU though {name} is present: no GPU kernel ran in the profiled steps "
              f"({cpu_time * 1e3:.3g} ms of op time on the CPU); unless that is deliberate, move the model and its "
              f"inputs with .to('{device}')",
        evidence={"gpu": name, "how": unused.get("how", ""), "ops": len(report.ops), "ops_with_work": len(worked),
                  "cpu_time_s": cpu_time, "flops": sum(op.flops for op in worked),
                  "bytes": sum(op.bytes for op in worked)},
        locations=top_locations(worked or report.ops), estimated_savings_s=savings, savings_method=method,
        fix=FIX.format(device=device),
        severity=max(severity_for(report, savings), "warning", key=_rank),
    )]


def _gpu_time(op: OpRecord, roofs: dict, launch_s: float) -> float:
    peaks = roofs.get("peak_flops_per_s") or {}
    peak = peaks.get(op.dtype) or peaks.get("float32") or max(peaks.values(), default=0.0)
    bandwidth = roofs.get("memory_bandwidth_bytes_per_s") or 0.0
    compute = op.flops / peak if peak > 0 else 0.0
    memory = op.bytes / bandwidth if bandwidth > 0 else 0.0
    return max(compute, memory, launch_s)


def _rank(severity: str) -> int:
    return {"info": 0, "warning": 1, "critical": 2}.get(severity, 0)
