"""Launch-overhead-bound stretches: many short kernels with the device idle between them.

On a GPU timeline: runs of kernels each idled-before at least as long as it ran (and shorter than the measured
launch overhead when known). Replaying them as a CUDA graph, or fusing them with torch.compile, removes the gaps.
On a CPU report there is no device timeline, so the evidence is the ops whose time is mostly the per-op overhead
(the analysis's bound == "launch", or time within twice the measured launch overhead and a roof time below it).
"""

from __future__ import annotations

from operator import attrgetter

import numpy as np

from roofline.doctor.evidence import (VIEW_KINDS, device_time_share, is_cpu_report, kernel_table, op_kind,
                                      roofline_time, severity_for, top_locations, torch_device)
from roofline.doctor.op_table import KernelTable
from roofline.doctor.registry import register
from roofline.report import Finding, OpRecord, Report

RULE = "launch-overhead"
MIN_STRETCH_KERNELS = 10
MIN_LAUNCH_BOUND_OPS = 10
MIN_SHARE = 0.05
LAUNCH_FACTOR = 2.0
# A gap before a tiny kernel counts as launch cost only up to this: eager PyTorch spends some 5-50 us per op.
MAX_LAUNCH_GAP_S = 100e-6
GAP_CAP_FACTOR = 20.0

FIX = ("capture the repeated step in a CUDA graph (torch.compile(mode='reduce-overhead') or torch.cuda.CUDAGraph), "
       "or fuse the small ops with torch.compile; on the CPU, torch.compile fuses them into fewer, larger kernels")
ORT_GPU_FIX = ("capture the run as a CUDA graph in ONNX Runtime's CUDA provider: provider option enable_cuda_graph=1, "
               "inputs and outputs bound with IOBinding at static shapes (session.run_with_iobinding), every node on "
               "the CUDA provider; and let ORT fuse nodes (graph optimisation level all)")
ORT_CPU_FIX = ("let ONNX Runtime fuse the graph into fewer, larger nodes: graph optimisation level all "
               "(SessionOptions.graph_optimization_level = ORT_ENABLE_ALL), and for transformer graphs "
               "onnxruntime.transformers.optimizer")
ONNX_FIX = "fuse the small layers in the exported graph (fewer, larger layers) before compiling it for the device"
FUSE_FIX = ("fuse the small ops with torch.compile: fewer, larger kernels, so fewer launches and fewer gaps between "
            "them")
CPU_FIX = ("fuse the small ops with torch.compile (Inductor's C++ backend turns a run of them into one loop): fewer "
           "ops, so less per-op dispatch; and batch the work, so each op has more to do per call")


def fix_for(report: Report) -> str:
    """The fix in the runtime the report was measured in: a report of an ONNX graph (``extra["onnx"]``, from
    `roofline ort` or `roofline trace --onnx`) is not fixed with torch.compile."""
    onnx = report.extra.get("onnx") if isinstance(report.extra, dict) else None
    if not isinstance(onnx, dict):
        # CUDA graphs are CUDA's (ROCm's too, under torch.cuda); on an Intel XPU or Apple MPS fusion is the fix, and
        # on a CPU the overhead is dispatch, which fusing or batching removes
        if is_cpu_report(report):
            return CPU_FIX
        return FUSE_FIX if torch_device(report) in ("xpu", "mps") else FIX
    if not str(onnx.get("source", "")).startswith("onnxruntime"):
        return ONNX_FIX
    return ORT_GPU_FIX if onnx.get("main_unit") == "gpu" else ORT_CPU_FIX


@register(RULE, "many short kernels with the device idle between them")
def check(report: Report) -> list[Finding]:
    if report.kernels:
        table = kernel_table(report)
        device_events = np.flatnonzero(table.dur_s >= 0)
        if len(device_events):
            by_start = device_events[np.argsort(table.start_s[device_events], kind="stable")]
            gpus = _per_gpu(table, by_start)
            if len(gpus) < 2:
                return _gpu_stretches(report, table, by_start)
            # One process driving several GPUs: each GPU's timeline on its own (another GPU's kernels do not fill
            # its gaps); the most idle GPU's finding, named.
            found = [(f, device) for device, order in gpus.items() for f in _gpu_stretches(report, table, order)]
            if not found:
                return []
            finding, device = max(found, key=lambda fd: fd[0].evidence["idle_s"])
            finding.title += f" on GPU {device}"
            finding.evidence["device"] = device
            finding.evidence["gpus_with_stretches"] = sorted(d for _, d in found)
            return [finding]
    return _cpu_launch_bound(report)


def _per_gpu(table: KernelTable, order: np.ndarray) -> dict[int, np.ndarray]:
    """``order`` split by the kernels' GPU (kernels with no device id go with the first GPU)."""
    kernels = table.kernels
    devices = [kernels[i].device for i in order.tolist()]
    ids = sorted({d for d in devices if d is not None})
    if len(ids) < 2:
        return {ids[0] if ids else 0: order}
    column = np.array([ids[0] if d is None else d for d in devices])
    return {d: order[column == d] for d in ids}


def _gpu_stretches(report: Report, table: KernelTable, order: np.ndarray) -> list[Finding]:
    """``order``: the device events' positions in report.kernels by start time. A kernel is starved when the
    device idled before it (since the latest end so far) at least as long as it ran; a stretch is a run of at least
    MIN_STRETCH_KERNELS starved kernels."""
    overhead = report.ceilings.launch_overhead_s
    start, dur = table.start_s[order], table.dur_s[order]
    latest_end = np.maximum.accumulate(np.maximum(start + dur, 0.0))
    gap = np.zeros_like(start)
    gap[1:] = _max_zero(start[1:] - latest_end[:-1])
    starved = gap >= dur
    starved[0] = False
    if overhead > 0:
        starved &= dur < overhead
    stretches = [(a, b) for a, b in _runs(starved) if b - a >= MIN_STRETCH_KERNELS]
    if not stretches:
        return []
    picked = np.concatenate([np.arange(a, b) for a, b in stretches])
    picked_gaps = gap[picked].tolist()
    picked_durs = dur[picked].tolist()
    n = len(picked_gaps)
    gaps = sum(picked_gaps)
    busy = sum(picked_durs)
    kernels = table.kernels
    first, last = kernels[int(order[0])], kernels[int(order[-1])]
    span = last.start_s + last.dur_s - first.start_s
    if span <= 0 or gaps / span < MIN_SHARE:
        return []
    graph = report.ceilings.launch_overhead_graph_s or 0.0
    gap_cap = max(GAP_CAP_FACTOR * overhead, MAX_LAUNCH_GAP_S)
    removable = sum(np.where(gap_cap < gap[picked], gap_cap, gap[picked]).tolist())  # min(gap, gap_cap) each
    savings = min(max(removable - n * graph, 0.0), gaps)
    remover = "a CUDA graph replay" if torch_device(report) == "cuda" else "fusing the kernels"
    method = (f"device idle between the stretches' kernels (gaps on the kernel timeline), which {remover} "
              f"removes, each gap counted up to {gap_cap * 1e6:.3g} us (a longer gap is host work or a wait, not "
              "the launch)" + (f", less the measured graph launch cost per kernel ({graph * 1e6:.3g} us x {n})" if graph else ""))
    op_ids = {i for i in map(_OP_INDEX, map(kernels.__getitem__, order[picked].tolist())) if i is not None}
    all_ops = report.ops
    n_ops = len(all_ops)
    ops = [all_ops[i] for i in op_ids if 0 <= i < n_ops]
    return [Finding(
        rule=RULE, category="launch",
        title=f"launch-bound: {n} short kernels in {len(stretches)} stretch(es), device idle {_percent(gaps / span)} of the span",
        evidence={"kernels": n, "stretches": len(stretches), "idle_s": gaps, "removable_idle_s": removable,
                  "busy_s": busy, "span_s": span,
                  "median_kernel_s": sorted(picked_durs)[n // 2],
                  "launch_overhead_s": overhead},
        locations=top_locations(ops), estimated_savings_s=savings, savings_method=method, fix=fix_for(report),
        severity=severity_for(report, savings),
    )]


_OP_INDEX = attrgetter("op_index")


def _max_zero(values: np.ndarray) -> np.ndarray:
    """max(v, 0.0) as Python takes it, element by element (v itself unless 0.0 > v)."""
    return np.where(values < 0.0, 0.0, values)


def _runs(flags: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of each run of true flags."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], flags.view(np.int8), [0]))))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist()))


def is_launch_bound(report: Report, op: OpRecord) -> bool:
    if op_kind(op.name) in VIEW_KINDS or op.time_s <= 0:
        return False
    if op.bound == "launch":
        return True
    overhead = report.ceilings.launch_overhead_s
    return overhead > 0 and op.time_s <= LAUNCH_FACTOR * overhead and roofline_time(report, op) < overhead


def _cpu_launch_bound(report: Report) -> list[Finding]:
    ops = [op for op in report.ops if is_launch_bound(report, op)]
    if len(ops) < MIN_LAUNCH_BOUND_OPS:
        return []
    spent = sum(op.time_s for op in ops)
    if device_time_share(report, spent) < MIN_SHARE:
        return []
    overhead = report.ceilings.launch_overhead_s
    graph = report.ceilings.launch_overhead_graph_s or 0.0
    if overhead > 0:
        savings = max(sum(min(op.time_s, overhead) for op in ops) - len(ops) * graph, 0.0)
        method = (f"per-op overhead removed: for each launch-bound op, its time up to the measured launch overhead "
                  f"({overhead * 1e6:.3g} us), summed over {len(ops)} ops" + (", less the graph launch cost" if graph else ""))
    else:
        savings = sum(max(op.time_s - roofline_time(report, op), 0.0) for op in ops)
        method = "the launch-bound ops' time above their roofline time (no launch overhead measured)"
    return [Finding(
        rule=RULE, category="launch",
        title=f"launch-overhead-bound: {len(ops)} ops whose time is mostly per-op overhead ({device_time_share(report, spent):.0%} of the time)",
        evidence={"ops": len(ops), "time_s": spent, "launch_overhead_s": overhead,
                  "median_op_s": sorted(op.time_s for op in ops)[len(ops) // 2],
                  "op_kinds": sorted({op_kind(op.name) for op in ops})[:12]},
        locations=top_locations(ops), estimated_savings_s=savings, savings_method=method, fix=fix_for(report),
        severity=severity_for(report, savings),
    )]


def _percent(share: float) -> str:
    """A share in whole percent that never reads 100% or 0% unless it is: a generation loop's GPU idled 99.5% of
    its span and the title said "device idle 100%" though 458 kernels ran."""
    if 0.0 < share < 1.0:
        if share >= 0.995:
            return "over 99%"
        if share < 0.005:
            return "under 1%"
    return f"{share:.0%}"
