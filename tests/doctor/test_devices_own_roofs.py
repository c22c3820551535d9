"""One process driving GPUs of different models (an A100 as device 0, an H100 as device 1): the doctor's
roof-based estimates put each op's bytes and FLOPs on its own GPU's roofs (Report.ceilings_by_device), not the
first GPU's."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline.analyze.trace_file import analyze_trace_file
from roofline.doctor.evidence import bandwidth_of, ceilings_of, roofline_time_of
from roofline.doctor.rules.excess_traffic import extra_time_s
from roofline.report import MeasuredTraffic

TRACE = Path(__file__).parents[1] / "data" / "devtraces" / "two_gpus_taking_turns_a100_h100.json"
A100_BW, H100_BW = 2.039e12, 3.35e12


@pytest.fixture(scope="module")
def report():
    return analyze_trace_file(TRACE)


def _on(report, device, name):
    """The first op named ``name`` whose kernels ran on ``device``."""
    ops = {k.op_index for k in report.kernels if k.device == device}
    return next(op for op in report.ops if op.index in ops and op.name == name)


def test_each_op_is_timed_at_its_own_gpus_bandwidth(report):
    assert report.ceilings.memory_bandwidth_bytes_per_s == A100_BW  # the first GPU's: what every op used before
    on_h100, on_a100 = _on(report, 1, "aten::relu"), _on(report, 0, "aten::relu")
    assert ceilings_of(report, on_h100).device_name == "NVIDIA H100 80GB HBM3"
    assert bandwidth_of(report, on_h100) == H100_BW
    assert bandwidth_of(report, on_a100) == A100_BW
    assert roofline_time_of(report, 0.0, on_h100.bytes, "float16", on_h100) == pytest.approx(67108864 / H100_BW)
    assert roofline_time_of(report, 0.0, on_a100.bytes, "float16", on_a100) == pytest.approx(67108864 / A100_BW)
    assert roofline_time_of(report, 0.0, on_h100.bytes, "float16") == pytest.approx(67108864 / A100_BW)


def test_excess_traffic_on_the_h100_costs_its_bytes_at_the_h100s_bandwidth(report):
    op = _on(report, 1, "aten::relu").__copy__()
    op.measured = MeasuredTraffic(dram_bytes=2 * op.bytes)
    op.time_s = 1e-3  # far above the roof: the bound is the extra bytes' own time
    assert extra_time_s(report, op) == pytest.approx(op.bytes / H100_BW)


def test_compute_roof_ratios_are_the_ops_own_gpus(report):
    """TF32's and half precision's savings scale a compute-bound op's time by its own GPU's roofs: the H100's
    67 / 494.7 (fp32 / TF32) and 67 / 989.4 (fp32 / fp16) TFLOP/s, not the A100's 19.5 / 156 and 19.5 / 312."""
    from roofline.doctor.rules.precision_island import _savings_of
    from roofline.doctor.rules.tf32 import fp32_peak, tf32_peak

    on_h100, on_a100 = _on(report, 1, "aten::addmm"), _on(report, 0, "aten::addmm")
    assert (fp32_peak(report, on_h100), tf32_peak(report, on_h100)) == (67e12, 494.7e12)
    assert (fp32_peak(report, on_a100), tf32_peak(report, on_a100)) == (19.5e12, 156e12)
    assert on_h100.bound == on_a100.bound == "compute"
    saving = _savings_of(report, "float16")
    assert saving(on_h100) == pytest.approx(on_h100.time_s * (1 - 67 / 989.4))
    assert saving(on_a100) == pytest.approx(on_a100.time_s * (1 - 19.5 / 312))


def test_undersized_memory_bound_ops_are_placed_at_their_own_gpus_memory_roof(report):
    """Four small copies of 4 MB on each GPU at 1 TB/s: the saving is their time less 4 x 4 MB at the A100's
    2.039 TB/s and 4 x 4 MB at the H100's 3.35 TB/s (the A100's for all eight would save less)."""
    import msgspec

    from roofline.doctor import diagnose
    from roofline.report import KernelRecord, OpRecord, Report

    mixed = Report.from_json(report.json_bytes())
    size, dur = 4e6, 4e-6
    mixed.ops = [OpRecord(name="aten::copy_", index=i, bytes=size, time_s=dur, bound="memory", dtype="float16",
                          modeled=True) for i in range(8)]
    mixed.kernels = [KernelRecord(name="copy_kernel", start_s=i * 1e-5, dur_s=dur, device=i // 4, op_index=i)
                     for i in range(8)]
    mixed.summary = msgspec.structs.replace(mixed.summary, total_time_s=8 * dur)
    [finding] = diagnose(mixed, rules=["undersized-memory-bound"])
    at_roof = 4 * size / A100_BW + 4 * size / H100_BW
    assert finding.estimated_savings_s == pytest.approx(8 * dur - at_roof)
    assert finding.evidence["share_of_roof"] == pytest.approx(at_roof / (8 * dur))
    assert "each op's own GPU's measured memory bandwidth" in finding.savings_method
