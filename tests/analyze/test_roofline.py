import math

import pytest
import torch

from roofline.analyze.roofline import LAUNCH_CLOSE, module_prefixes, place_op, summarize
from roofline.report import Ceilings, OpRecord

CEIL = Ceilings(device="cuda", memory_bandwidth_bytes_per_s=4e12,
                peak_flops_per_s={"float16": 8e14, "float32": 5e13}, launch_overhead_s=5e-6)


def test_attainable_is_the_lower_roof_and_efficiency_is_achieved_over_it():
    # intensity 100 FLOP/B < ridge 200 for fp16: memory roof 4e14 FLOP/s
    op = place_op(OpRecord(name="aten::mm", dtype="float16", flops=1e12, bytes=1e10, time_s=5e-3), CEIL)
    assert op.arithmetic_intensity == pytest.approx(100)
    assert op.attainable_flops_per_s == pytest.approx(4e14)
    assert op.achieved_flops_per_s == pytest.approx(2e14)
    assert op.efficiency == pytest.approx(0.5)
    assert op.bound == "memory"
    assert op.predicted_time_s == pytest.approx(max(1e12 / 8e14, 1e10 / 4e12, 5e-6))


def test_above_ridge_is_compute_bound_and_dtype_picks_the_roof():
    op = place_op(OpRecord(name="aten::mm", dtype="float32", flops=1e12, bytes=1e9, time_s=0.05), CEIL)
    assert op.bound == "compute" and op.attainable_flops_per_s == 5e13


def test_short_ops_and_views_are_launch_bound():
    tiny = place_op(OpRecord(name="aten::add", dtype="float32", flops=16, bytes=192,
                             time_s=LAUNCH_CLOSE * 5e-6 * 0.9), CEIL)
    view = place_op(OpRecord(name="aten::view", flops=0, bytes=0, time_s=1e-4), CEIL)
    assert tiny.bound == "launch" and view.bound == "launch"


def test_idle_device_around_a_short_op_makes_it_launch_bound():
    op = OpRecord(name="aten::add", dtype="float32", flops=1e6, bytes=1.2e7, time_s=8e-6)
    assert place_op(op, CEIL, idle_before_s=2e-5).bound == "launch"
    assert place_op(op, CEIL, idle_before_s=1e-6).bound == "memory"


def test_idle_before_makes_launch_bound_only_under_the_idle_factor_times_the_launch_overhead():
    """Far above its roofline time, after an idle stretch longer than itself, but too long to be launch cost."""
    from roofline.analyze.roofline import LAUNCH_IDLE_FACTOR

    launch = CEIL.launch_overhead_s
    slow = OpRecord(name="aten::add", dtype="float32", flops=1e6, bytes=1.2e7, time_s=1.05 * LAUNCH_IDLE_FACTOR * launch)
    fast = OpRecord(name="aten::add", dtype="float32", flops=1e6, bytes=1.2e7, time_s=0.95 * LAUNCH_IDLE_FACTOR * launch)
    assert slow.time_s > LAUNCH_CLOSE * launch
    assert place_op(slow, CEIL, idle_before_s=1e-3).bound == "memory"
    assert place_op(fast, CEIL, idle_before_s=1e-3).bound == "launch"


def test_ops_above_the_roof_are_flagged_not_hidden():
    op = place_op(OpRecord(name="aten::add", dtype="float32", flops=1e6, bytes=1e9, time_s=1e-4), CEIL)
    assert op.efficiency > 1 and op.above_roof and op.bound == "memory"


def test_copies_are_judged_on_bytes():
    op = place_op(OpRecord(name="aten::copy_", dtype="float32", flops=0, bytes=8e9, time_s=4e-3), CEIL)
    assert op.efficiency == pytest.approx(0.5) and op.bound == "memory"
    assert op.arithmetic_intensity == 0


def test_unmodeled_ops_keep_their_time_in_the_share():
    ops = [place_op(OpRecord(name="aten::mystery", time_s=3e-3, modeled=False), CEIL),
           place_op(OpRecord(name="aten::mm", dtype="float32", flops=1e12, bytes=1e9, time_s=1e-3), CEIL)]
    s = summarize(ops)
    assert ops[0].bound == "unmodeled"
    assert s.total_time_s == pytest.approx(4e-3)
    assert s.unmodeled_time_share == pytest.approx(0.75)
    assert s.time_by_bound_s["unmodeled"] == pytest.approx(3e-3)


def test_module_totals_roll_up_the_tree():
    assert module_prefixes("layers.3.mlp") == ("layers", "layers.3", "layers.3.mlp")
    ops = [OpRecord(name="a", module="layers.0.mlp", time_s=1.0), OpRecord(name="b", module="layers.1", time_s=2.0)]
    s = summarize(ops)
    assert s.time_by_module_s["layers"] == 3.0 and s.time_by_module_s["layers.0"] == 1.0
    assert s.time_by_op_s == {"b": 2.0, "a": 1.0}
