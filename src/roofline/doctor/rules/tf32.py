"""fp32 matmuls and convolutions with TF32 off on a GPU with TF32 tensor cores (Ampere, compute capability 8.0+).

Evidence: fp32 matmul/conv ops whose kernels were recorded and none of them is a TF32 kernel (judged per kernel
from its name: analyze/kernel_names.py), on an NVIDIA device the report names as Ampere or newer
(report.extra['compute_capability'], else the device name). Other vendors get no TF32 advice.
"""

from __future__ import annotations

import re

from roofline.analyze.kernel_names import any_tf32
from roofline.doctor.evidence import (CONV_KINDS, MATMUL_KINDS, bandwidth_of, ceilings_of, op_kind, op_table,
                                      roofline_time_of, severity_for, tensor_inputs, top_locations)
from roofline.doctor.registry import register
from roofline.report import Finding, OpRecord, Report

RULE = "tf32-off"
TF32_KEYS = ("tfloat32", "tf32")

_AMPERE_OR_NEWER = re.compile(
    r"\b(A100|A800|A10G?|A30|A40|A16|A2|A6000|A5000|A4000|RTX\s*A\d{4}|RTX\s*[345]0\d\d|L4|L40S?|L20|H100|H200|H800|"
    r"H20|GH200|B100|B200|GB200|B300|GB300|RTX\s*PRO|Ada)\b", re.I)


_OTHER_VENDOR = re.compile(r"\bAMD\b|Radeon|Instinct|\bMI\d{3}|MTIA|ARTEMIS|Intel|Gaudi", re.I)


def is_nvidia(report: Report) -> bool:
    """TF32 is NVIDIA's: a device identified as another vendor's, or named as one, gets no TF32 advice."""
    device = report.extra.get("device") if isinstance(report.extra.get("device"), dict) else {}
    if device.get("vendor"):
        return device["vendor"] == "nvidia"
    names = [report.ceilings.device_name, report.environment.device_name]
    return not any(_OTHER_VENDOR.search(n or "") for n in names)


def compute_capability(report: Report) -> float | None:
    trace = report.extra.get("trace") if isinstance(report.extra.get("trace"), dict) else {}
    device = report.extra.get("device") if isinstance(report.extra.get("device"), dict) else {}
    cc = report.extra.get("compute_capability") or trace.get("compute_capability") or device.get("compute_capability")
    if isinstance(cc, (list, tuple)) and len(cc) >= 2:
        return float(cc[0]) + float(cc[1]) / 10
    if isinstance(cc, (int, float, str)):
        try:
            return float(cc)
        except ValueError:
            pass
    names = [report.ceilings.device_name, report.environment.device_name,
             report.ceilings.datasheet.name if report.ceilings.datasheet else ""]
    if any(_AMPERE_OR_NEWER.search(n or "") for n in names):
        return 8.0
    return None


def tf32_peak(report: Report, op: OpRecord | None = None) -> float:
    """The TF32 compute roof of ``op``'s GPU (evidence.ceilings_of), else the report's."""
    c = ceilings_of(report, op)
    for key in TF32_KEYS:
        if c.peak_flops_per_s.get(key):
            return c.peak_flops_per_s[key]
    if c.datasheet:
        for key in TF32_KEYS:
            if c.datasheet.peak_flops_per_s.get(key):
                return c.datasheet.peak_flops_per_s[key]
    return 0.0


def fp32_peak(report: Report, op: OpRecord | None = None) -> float:
    """The fp32 compute roof of ``op``'s GPU (evidence.ceilings_of), else the report's."""
    c = ceilings_of(report, op)
    if c.peak_flops_per_s.get("float32"):
        return c.peak_flops_per_s["float32"]
    if c.datasheet:
        return c.datasheet.peak_flops_per_s.get("float32", 0.0)
    return 0.0


def _fp32_matmul(op: OpRecord) -> bool:
    """A matmul/conv call whose first floating input is fp32."""
    kind = op_kind(op.name)
    if kind not in MATMUL_KINDS and kind not in CONV_KINDS:
        return False
    floats = [d for _, d, _ in tensor_inputs(op) if d.startswith("float")]
    return bool(floats) and floats[0] == "float32"


def fp32_matmuls_without_tf32(report: Report) -> list[OpRecord]:
    table = op_table(report)
    found, seen = [], set()
    for op in table.ops_at(table.positions(table.per_call(_fp32_matmul))):
        if not op.kernels or any_tf32(op.kernels):
            continue
        key = (tuple(op.kernels), op.start_s, op.step)
        if key in seen:
            continue
        seen.add(key)
        found.append(op)
    return found


def _compute_bound(report: Report, op: OpRecord) -> bool:
    if op.bound in ("compute", "memory", "launch"):
        return op.bound == "compute"
    bw = bandwidth_of(report, op)
    peak = fp32_peak(report, op)
    return peak > 0 and bw > 0 and op.flops / peak >= op.bytes / bw


@register(RULE, "fp32 matmuls with TF32 off on Ampere or newer")
def check(report: Report) -> list[Finding]:
    if not is_nvidia(report):
        return []
    cc = compute_capability(report)
    if cc is None or cc < 8.0:
        return []
    ops = fp32_matmuls_without_tf32(report)
    if not ops:
        return []
    time = sum(op.time_s for op in ops)
    fast, slow = tf32_peak(report), fp32_peak(report)
    bound = [op for op in ops if _compute_bound(report, op)]
    if fast > 0 and slow > 0:
        savings = 0.0
        for op in bound:
            op_fast, op_slow = tf32_peak(report, op), fp32_peak(report, op)
            if not (op_fast > 0 and op_slow > 0):
                op_fast, op_slow = fast, slow
            tf32_time = max(op.time_s * op_slow / op_fast,
                            roofline_time_of(report, 0.0, op.bytes, "float32", op))
            savings += max(op.time_s - tf32_time, 0.0)
        method = (f"compute-bound fp32 ops' time scaled by the fp32/TF32 compute roofs ({slow:.3g}/{fast:.3g} "
                  "FLOP/s), never below their memory-roof time; memory-bound ones gain nothing")
    else:
        savings, method = 0.0, "not estimated: the ceilings hold no TF32 peak for this device"
    on = tf32_ops(report)
    if on:
        title = (f"TF32 is on ({on} fp32 matmul/conv ops ran TF32 kernels), but {len(ops)} ran plain fp32 kernels "
                 "that cuBLAS/cuDNN chose for their shapes")
        fix = ("these shapes get no tensor-core kernel: pad dimensions to multiples of 8 (16 better), batch the "
               "small or skinny matmuls, or run them in bf16/fp16 with autocast")
    else:
        title = f"{len(ops)} fp32 matmul/conv ops run without TF32 on a compute capability {cc:g} GPU"
        fix = ("enable TF32 tensor cores: torch.backends.cuda.matmul.allow_tf32 = True and "
               "torch.backends.cudnn.allow_tf32 = True (or torch.set_float32_matmul_precision('high')), "
               "or run the model in bf16/fp16 with autocast")
    return [Finding(
        rule=RULE, category="precision", title=title,
        evidence={"ops": len(ops), "compute_bound_ops": len(bound), "time_s": time, "tf32_ops": on,
                  "op_kinds": sorted({op_kind(op.name) for op in ops}),
                  "kernels": sorted({k for op in ops for k in op.kernels})[:3],
                  "fp32_peak_flops_per_s": slow, "tf32_peak_flops_per_s": fast},
        locations=top_locations(ops), estimated_savings_s=savings, savings_method=method, fix=fix,
        severity=severity_for(report, savings),
    )]


def tf32_ops(report: Report) -> int:
    """fp32 matmul/conv ops that ran TF32 kernels: TF32 is already enabled in that process."""
    table = op_table(report)
    matmul = [kind in MATMUL_KINDS or kind in CONV_KINDS for kind in table.call_kind]
    return sum(1 for op in table.ops_at(table.positions(matmul)) if any_tf32(op.kernels))
