"""place_op, classify and summarize at every branch, with exact figures: ops with no bytes or no FLOPs, devices
with no memory roof or no compute roof for the dtype, the summary's totals, shares, sort orders and module roll-up."""

from __future__ import annotations

import math

import pytest

from roofline.analyze.roofline import classify, module_prefixes, place_op, roofline_time_s, summarize
from roofline.report import Ceilings, OpRecord

CEIL = Ceilings(device="cuda", memory_bandwidth_bytes_per_s=4e12, peak_flops_per_s={"float16": 8e14, "float32": 5e13},
                launch_overhead_s=5e-6)


def test_intensity_and_rates_at_the_edges():
    flops_only = place_op(OpRecord(name="x", dtype="float32", flops=1e9, bytes=0, time_s=1e-3), CEIL)
    assert flops_only.arithmetic_intensity == math.inf and flops_only.attainable_flops_per_s == 5e13
    assert flops_only.achieved_flops_per_s == pytest.approx(1e12) and flops_only.achieved_bytes_per_s == 0
    assert flops_only.efficiency == pytest.approx(0.02) and flops_only.bound == "compute"
    assert flops_only.predicted_time_s == pytest.approx(2e-5)
    idle = place_op(OpRecord(name="x", dtype="float32", flops=1e9, bytes=1e6, time_s=0.0), CEIL)
    assert idle.achieved_flops_per_s == 0 and idle.achieved_bytes_per_s == 0 and idle.efficiency == 0
    assert not idle.above_roof
    copy = place_op(OpRecord(name="c", flops=0, bytes=4e9, time_s=2e-3), CEIL)
    assert copy.arithmetic_intensity == 0 and copy.attainable_flops_per_s == 0
    assert copy.achieved_bytes_per_s == pytest.approx(2e12) and copy.efficiency == pytest.approx(0.5)
    view = place_op(OpRecord(name="v", flops=0, bytes=0, time_s=1e-6), CEIL)
    assert view.efficiency == 0 and view.bound == "launch" and view.predicted_time_s == 5e-6
    fast = place_op(OpRecord(name="c", flops=0, bytes=4e9, time_s=5e-4), CEIL)
    assert fast.above_roof and fast.efficiency == pytest.approx(2.0)
    unmodeled = place_op(OpRecord(name="u", flops=0, bytes=4e9, time_s=5e-4, modeled=False), CEIL)
    assert not unmodeled.above_roof and unmodeled.bound == "unmodeled"


def test_devices_missing_a_roof():
    no_bw = Ceilings(device="cuda", peak_flops_per_s={"float32": 5e13}, launch_overhead_s=5e-6)
    op = place_op(OpRecord(name="mm", dtype="float32", flops=1e9, bytes=1e9, time_s=1e-3), no_bw)
    assert op.attainable_flops_per_s == 5e13 and op.efficiency == pytest.approx(1e12 / 5e13)
    assert op.bound == "unknown" and op.predicted_time_s == pytest.approx(2e-5)
    assert roofline_time_s(op, no_bw) == pytest.approx(2e-5)
    copy = place_op(OpRecord(name="c", flops=0, bytes=1e9, time_s=1e-3), no_bw)
    assert copy.efficiency == 0 and copy.bound == "unknown"
    no_peak = Ceilings(device="cuda", memory_bandwidth_bytes_per_s=1e12, peak_flops_per_s={}, launch_overhead_s=5e-6)
    assert roofline_time_s(OpRecord(name="x", dtype="float32", flops=1e9, bytes=1e9), no_peak) == pytest.approx(1e-3)


def test_classification_boundaries_exactly():
    nbytes = 4e12 * 1e-5  # roofline time 10 us, memory-bound
    at = OpRecord(name="add", dtype="float32", flops=1.0, bytes=nbytes, time_s=2e-5)  # exactly 2x: on the roof
    assert classify(at, CEIL) == "memory"
    short = OpRecord(name="add", dtype="float32", flops=1.0, bytes=4e12 * 1e-6, time_s=7.5e-6)  # 7.5x, = 1.5 launch
    assert classify(short, CEIL) == "launch"
    longer = OpRecord(name="add", dtype="float32", flops=1.0, bytes=4e12 * 1e-6, time_s=7.6e-6)
    assert classify(longer, CEIL) == "memory"
    assert classify(longer, CEIL, idle_before_s=7.6e-6) == "memory"  # idle must exceed the op's time
    assert classify(longer, CEIL, idle_before_s=7.7e-6) == "launch"
    slow = OpRecord(name="add", dtype="float32", flops=1.0, bytes=4e12 * 1e-6, time_s=1e-5)  # = 2x launch
    assert classify(slow, CEIL, idle_before_s=1.0) == "memory"
    zero_time = OpRecord(name="add", dtype="float32", flops=1.0, bytes=nbytes, time_s=0.0)
    assert classify(zero_time, CEIL) == "launch"
    ridge = OpRecord(name="mm", dtype="float16", flops=200 * 1e9, bytes=1e9, time_s=1.0)
    ridge.arithmetic_intensity = 200.0  # at the ridge point (8e14 / 4e12): compute-bound
    assert classify(ridge, CEIL) == "compute"
    ridge.arithmetic_intensity = 199.9
    assert classify(ridge, CEIL) == "memory"


def test_summary_totals_shares_and_orders():
    ops = [OpRecord(name="mm", module="enc.0", time_s=3e-3, flops=1e9, bytes=1e6, predicted_time_s=2e-3,
                    bound="compute", above_roof=True),
           OpRecord(name="add", module="enc.1", time_s=1e-3, flops=1e6, bytes=4e6, predicted_time_s=1e-3,
                    bound="memory"),
           OpRecord(name="mm", module="", time_s=2e-3, flops=2e9, bytes=2e6, predicted_time_s=1e-3, bound="compute"),
           OpRecord(name="zz", module="enc", time_s=2e-3, bound="unmodeled", modeled=False)]
    s = summarize(ops, timing_method="m", kernel_share=0.9, kernel_total_s=7e-3, idle_s=1e-4)
    assert s.total_time_s == pytest.approx(8e-3) and s.total_flops == 3.001e9 and s.total_bytes == 7e6
    assert s.predicted_total_s == pytest.approx(4e-3) and s.ops_above_roof == 1
    assert s.time_by_bound_s == pytest.approx({"compute": 5e-3, "memory": 1e-3, "unmodeled": 2e-3})
    assert s.share_by_bound == pytest.approx({"compute": 0.625, "memory": 0.125, "unmodeled": 0.25})
    assert s.unmodeled_time_share == pytest.approx(0.25)
    assert list(s.time_by_op_s) == ["mm", "zz", "add"] and s.time_by_op_s["mm"] == pytest.approx(5e-3)
    assert list(s.time_by_module_s) == ["enc", "enc.0", "(top level)", "enc.1"]
    assert s.time_by_module_s["enc"] == pytest.approx(6e-3)
    assert (s.timing_method, s.kernel_time_attributed_share, s.kernel_time_total_s, s.idle_time_s) == \
        ("m", 0.9, 7e-3, 1e-4)
    empty = summarize([])
    assert empty.total_time_s == 0 and empty.share_by_bound == {} and empty.unmodeled_time_share == 0
    assert module_prefixes("") == ("(top level)",) and module_prefixes("a") == ("a",)
