"""Memory-bound ops far below the memory roof because each is too small to fill the GPU.

A kernel that reads a few MB needs only microseconds at the roof (8 MB: 1.7 us on an H200), about what it takes
to launch its programs, ramp the memory pipe and drain the last wave: batch-1 decode's matrix-vector products
on 1-23 MB weights reached 1.9-2.4 TB/s of a 4.6 TB/s roof on the H200 (issue 19). Evidence: GPU ops the analysis
calls memory-bound, each moving few bytes (at the roof they would take under SMALL_ROOF_S; below MIN_BYTES the
launch dominates and the launch-overhead rule speaks) and running at under SLOW_SHARE of the measured bandwidth. Ops
whose device time holds a copy between host and device (a ``.to('cuda')``'s Memcpy HtoD, a ``.cpu()``'s DtoH) are
not among them: they move their bytes over PCIe or NVLink-C2C, not from HBM, and the host-to-device-copy and
host-device-sync rules speak for them. The saving is their time above the roof; the fix gives each kernel more of
the GPU or removes kernels: split-K or a tuned matrix-vector kernel, fusing the neighbours in, a CUDA graph with
programmatic dependent launch so one kernel's loads overlap the last one's tail.
"""

from __future__ import annotations

import functools
import statistics

from roofline.capture.trace_syncs import copy_direction
from roofline.doctor.evidence import (VIEW_KINDS, bandwidth_of, ceilings_by_op, device_time_share, is_gpu_report,
                                      op_bytes, op_kind, severity_for, top_locations, torch_device)
from roofline.doctor.registry import register
from roofline.report import Finding, OpRecord, Report

RULE = "undersized-memory-bound"
SMALL_ROOF_S = 20e-6  # at the roof, under this: a kernel this short is dominated by ramp-up and tail
SLOW_SHARE = 0.6
MIN_BYTES = 256 * 1024  # below this the launch itself dominates: the launch-overhead rule's ground
MIN_OPS = 4
MIN_SHARE = 0.05
MATMULS = {"mm", "addmm", "linear", "matmul", "bmm", "baddbmm", "addmv", "mv"}

FIX = ("give each kernel enough work to fill the GPU, or fewer kernels: for matrix-vector products (batch-1 "
       "decode) a tuned GEMV with split-K so short outputs still spread over every {units} (Inductor's "
       "coordinate_descent_tuning, or a Triton kernel), stack weights that read the same input (q/k/v, gate/up) "
       "into one product, fuse the norm before and the residual add or activation after into the same kernel "
       "(torch.compile){overlap}; batching more rows per call raises the bytes per kernel too")
# CUDA only: graphs replay the step and programmatic dependent launch overlaps a kernel's start with the previous
# one's tail; XPU and MPS have neither in torch, so their advice stops at fusing.
CUDA_OVERLAP = (", and capture the step in a CUDA graph, with programmatic dependent launch where the kernels allow "
                "it, so each kernel's loads start while the previous one drains")
UNITS = {"cuda": "SM", "xpu": "Xe core"}


def fix_for(report: Report) -> str:
    device = torch_device(report)
    return FIX.format(units=UNITS.get(device, "compute unit"), overlap=CUDA_OVERLAP if device == "cuda" else "")


@register(RULE, "memory-bound ops too small to reach the memory roof")
def check(report: Report) -> list[Finding]:
    bandwidth = report.ceilings.memory_bandwidth_bytes_per_s
    if bandwidth <= 0 or not is_gpu_report(report):
        return []
    mixed = bool(ceilings_by_op(report))  # GPUs of different models: each op's bytes at its own GPU's roof
    ops = [op for op in report.ops
           if op.bound == "memory" and _undersized(op, bandwidth_of(report, op) if mixed else bandwidth)]
    if len(ops) < MIN_OPS:
        return []
    spent = sum(op.time_s for op in ops)
    if device_time_share(report, spent) < MIN_SHARE:
        return []
    moved = sum(op_bytes(op) for op in ops)
    achieved = moved / spent
    at_roof = sum(op_bytes(op) / bandwidth_of(report, op) for op in ops) if mixed else moved / bandwidth
    share = at_roof / spent if mixed else achieved / bandwidth
    roof = "each op's own GPU's measured memory bandwidth" if mixed else (
        f"the measured memory bandwidth ({bandwidth / 1e12:.3g} TB/s)")
    savings = max(spent - at_roof, 0.0)
    matmuls = [op for op in ops if op_kind(op.name) in MATMULS]
    kinds = sorted({op_kind(op.name) for op in ops})
    what = f"{len(matmuls)} of them matrix products" if matmuls else "none of them matrix products"
    return [Finding(
        rule=RULE, category="memory",
        title=(f"{len(ops)} small memory-bound ops reach {share:.0%} of the memory roof "
               f"({_mb(statistics.median(op_bytes(op) for op in ops))} each, median; {what}): too small to fill the GPU"),
        evidence={"ops": len(ops), "matmul_ops": len(matmuls), "time_s": spent, "bytes": moved,
                  "achieved_bytes_per_s": achieved, "memory_bandwidth_bytes_per_s": bandwidth,
                  "median_op_bytes": statistics.median(op_bytes(op) for op in ops),
                  "median_op_s": statistics.median(op.time_s for op in ops),
                  "share_of_roof": share, "op_kinds": kinds[:12],
                  "small_roof_s": SMALL_ROOF_S, "slow_share": SLOW_SHARE},
        locations=top_locations(sorted(ops, key=lambda o: -o.time_s)), estimated_savings_s=savings,
        savings_method=(f"their time less their bytes at {roof}: what they would take at the roof; the roof is an "
                        "upper bound no real kernel reaches"),
        fix=fix_for(report), severity=severity_for(report, savings),
    )]


def _undersized(op: OpRecord, bandwidth: float) -> bool:
    """Whether a memory-bound op (the caller picks those, in one pass over every op) moved too few bytes to reach
    ``bandwidth`` and ran well below it."""
    if op.time_s <= 0 or op_kind(op.name) in VIEW_KINDS:
        return False
    if any(map(_crosses_host_link, op.kernels)):
        return False
    moved = op_bytes(op)
    return MIN_BYTES <= moved < SMALL_ROOF_S * bandwidth and moved / op.time_s < SLOW_SHARE * bandwidth


@functools.lru_cache(maxsize=4096)
def _crosses_host_link(kernel: str) -> bool:
    """A device event that copies between host and device memory (memoised: a trace's names recur every step)."""
    return bool(copy_direction(kernel))


def _mb(nbytes: float) -> str:
    return f"{nbytes / 1e6:.3g} MB" if nbytes >= 1e5 else f"{nbytes / 1e3:.3g} KB"
