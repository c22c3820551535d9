"""Numbers of the analysis layer pinned at their boundaries: the bound rules and the diff gate's noise."""

from __future__ import annotations

import pytest

from roofline.analyze.diff import total_verdict
from roofline.analyze.roofline import place_op
from roofline.report import Ceilings, OpRecord, Report, Summary, Timing

CEIL = Ceilings(device="cuda", memory_bandwidth_bytes_per_s=4e12,
                peak_flops_per_s={"float16": 8e14, "float32": 5e13}, launch_overhead_s=5e-6)


def test_a_long_op_at_its_roofline_time_is_never_launch_bound_even_after_idle():
    """Device idle before an op makes it launch-bound only when the op itself is short (under 2x the launch
    overhead): a 40 us memory-bound op at its roofline time stays memory-bound after any idle gap."""
    nbytes = 4e12 * 40e-6
    op = OpRecord(name="aten::add", dtype="float32", flops=nbytes / 12, bytes=nbytes, time_s=40e-6)
    for idle in (0.0, 50e-6, 1e-3):
        assert place_op(op, CEIL, idle_before_s=idle).bound == "memory"
    mm = OpRecord(name="aten::mm", dtype="float32", flops=5e13 * 40e-6, bytes=1e6, time_s=40e-6)
    assert place_op(mm, CEIL, idle_before_s=1e-3).bound == "compute"


def test_a_tiny_op_far_above_its_roofline_time_is_launch_bound():
    op = OpRecord(name="aten::mul", dtype="float16", flops=512, bytes=3 * 1024, time_s=2e-6)
    assert place_op(op, CEIL).bound == "launch"
    assert place_op(op, CEIL, idle_before_s=1e-5).bound == "launch"


def test_roofline_fields_are_exact():
    op = place_op(OpRecord(name="aten::mm", dtype="float16", flops=8e11, bytes=4e9, time_s=2e-3), CEIL)
    assert op.arithmetic_intensity == pytest.approx(200)
    assert op.predicted_time_s == pytest.approx(1e-3)
    assert op.achieved_flops_per_s == pytest.approx(4e14)
    assert op.achieved_bytes_per_s == pytest.approx(2e12)
    assert op.attainable_flops_per_s == pytest.approx(8e14)
    assert op.efficiency == pytest.approx(0.5)


def _with_spread(total: float, spread: float) -> Report:
    samples = [total - spread, total - spread / 2, total, total + spread / 2, total + spread]
    return Report(ops=[OpRecord(name="aten::mm", time_s=total)], summary=Summary(total_time_s=total),
                  step_time=Timing.from_samples(samples, "CUDA events"))


def test_diff_noise_is_the_sum_of_both_spreads():
    a, b = _with_spread(1e-3, 2e-5), _with_spread(1.1e-3, 6e-5)
    verdict = total_verdict(a, b, 5.0)
    assert verdict.noise_s == pytest.approx(a.step_time.spread_s + b.step_time.spread_s)
    assert verdict.noise_s > max(a.step_time.spread_s, b.step_time.spread_s)


def test_diff_gate_fails_just_above_the_summed_noise_and_passes_just_below():
    a = _with_spread(1e-3, 2e-5)
    noise = 2 * a.step_time.spread_s
    # B's total differs, its spread equal: the delta sits just either side of the summed spreads.
    above = total_verdict(a, _with_spread(1e-3 + noise * 1.01, 2e-5), 0.1)
    below = total_verdict(a, _with_spread(1e-3 + noise * 0.99, 2e-5), 0.1)
    assert above.failed is True and below.failed is False
