"""A float64 model is judged against float32's compute roof where the ceilings carry no float64 one (datasheets,
ceilings measured before float64 was): the report's notes say so, with its compute-bound ops and their share of the
time; a float32 model gets no such note, nor a float64 one against measured ceilings."""

from __future__ import annotations

import torch

from roofline.analyze.live import analyze_model
from roofline.report import Ceilings

CPU = Ceilings(device="cpu", device_name="test cpu", memory_bandwidth_bytes_per_s=1e10,
               peak_flops_per_s={"float32": 1e11, "bfloat16": 2e11}, launch_overhead_s=5e-6, source="test")


def _report(dtype, ceilings=CPU):
    """Linear 256x512 @ 512x512 is compute-bound on these roofs (32 FLOP/B in float64 against a ridge of 10); the
    ReLU and the small head are memory-bound."""
    model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 8)).to(dtype)
    return analyze_model(model, (torch.randn(256, 512, dtype=dtype),), device=torch.device("cpu"), ceilings=ceilings,
                         warmup=1, iters=2)


def test_a_float64_model_is_said_to_be_judged_against_the_float32_roof():
    report = _report(torch.float64)
    (note,) = [n for n in report.summary.notes if "no float64 compute roof" in n]
    judged = [op for op in report.ops if op.bound == "compute" and op.dtype == "float64"]
    assert judged and note.startswith(f"{len(judged)} compute-bound op(s) in float64 (")
    assert "relu" not in note
    assert "addmm" in note and "judged against the float32 one (0.1 TFLOP/s)" in note
    assert all(op.attainable_flops_per_s <= CPU.peak_flops_per_s["float32"] for op in judged)


def test_a_float32_model_has_no_fallback_note():
    report = _report(torch.float32)
    assert not [n for n in report.summary.notes if "compute roof, so they are judged" in n]


def test_measured_cpu_ceilings_carry_a_float64_roof_and_a_float64_model_is_judged_against_it(cpu_ceilings):
    """Measured ceilings (quick, here) carry float64's own roof since 2026-12-03: no fallback, and the compute-bound
    products' attainable rate is float64's measured peak, not float32's."""
    assert cpu_ceilings.own_roof("float64") == "float64" and cpu_ceilings.peak_flops_per_s["float64"] > 0
    assert "float64: torch.mm on random float64 square matrices" in cpu_ceilings.method
    report = _report(torch.float64, cpu_ceilings)
    assert not [n for n in report.summary.notes if "no float64 compute roof" in n]
    judged = [op for op in report.ops if op.bound == "compute" and op.dtype == "float64"]
    assert judged  # 32 FLOP/B: above any CPU's float64 ridge
    assert all(op.attainable_flops_per_s == cpu_ceilings.peak_flops_per_s["float64"] for op in judged)
