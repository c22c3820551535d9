import math

import msgspec
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


# The H200's figures: DRAM 4.66 TB/s, L2 60 MiB; an in-place relu_ on [32, 1024, 14, 14] fp32 (25.7 MB, read and
# written back: 51.4 MB counted) took 9.70 us there, 114% of the DRAM roof.
H200 = Ceilings(device="cuda", memory_bandwidth_bytes_per_s=4.66e12, peak_flops_per_s={"float32": 5.08e13},
                launch_overhead_s=6.4e-6, cache_bandwidth_bytes_per_s=7.0e12, cache_bytes=60 * 2**20)
RELU_SHAPE = [32, 1024, 14, 14]
RELU_BYTES = 2 * 4 * 32 * 1024 * 14 * 14


def _relu(time_s=9.696e-6, shape=RELU_SHAPE, name="aten::relu_"):
    n = math.prod(shape)
    return OpRecord(name=name, dtype="float32", flops=n, bytes=2 * 4 * n, time_s=time_s,
                    input_shapes=[shape], input_dtypes=["float32"])


def test_an_op_that_fits_in_cache_and_beats_dram_is_judged_against_the_cache_roof():
    op = place_op(_relu(), H200)
    assert op.roof == "cache" and not op.above_roof and op.bound == "memory"
    assert op.efficiency == pytest.approx(RELU_BYTES / 9.696e-6 / 7.0e12)
    assert op.predicted_time_s == pytest.approx(RELU_BYTES / 7.0e12)
    same_on_dram = place_op(_relu(), msgspec.structs.replace(H200, cache_bandwidth_bytes_per_s=0.0, cache_bytes=0))
    assert same_on_dram.roof == "dram" and same_on_dram.above_roof and same_on_dram.efficiency > 1.13


def test_the_cache_roof_needs_both_a_fitting_footprint_and_a_time_that_beats_dram():
    slow = place_op(_relu(time_s=2 * 9.696e-6), H200)
    assert slow.roof == "dram" and slow.efficiency < 1
    big = [32, 1024, 28, 28]  # 103 MB: cannot have been served from a 60 MiB cache
    too_big = place_op(_relu(time_s=4 * 9.0e-6, shape=big), H200)
    assert too_big.roof == "dram" and too_big.above_roof


def test_an_op_above_even_the_cache_roof_is_flagged():
    op = place_op(_relu(time_s=5e-6), H200)
    assert op.roof == "cache" and op.above_roof and op.efficiency > 1


def test_footprint_takes_off_an_in_place_write_back_only():
    from roofline.analyze.roofline import footprint_bytes

    n = 4 * math.prod(RELU_SHAPE)
    assert footprint_bytes(_relu()) == n
    add_ = OpRecord(name="aten::add_", dtype="float32", bytes=3 * n, input_shapes=[RELU_SHAPE, RELU_SHAPE],
                    input_dtypes=["float32", "float32"])
    assert footprint_bytes(add_) == 2 * n
    copy_ = OpRecord(name="aten::copy_", dtype="float32", bytes=2 * n, input_shapes=[RELU_SHAPE, RELU_SHAPE],
                     input_dtypes=["float32", "float32"])
    assert footprint_bytes(copy_) == 2 * n  # writes self without reading it: nothing to take off
    assert footprint_bytes(_relu(name="aten::relu")) == 2 * n
    assert footprint_bytes(_relu(name="relu_")) == n  # a name without a namespace (a trace's own op name)


def test_without_a_cache_roof_a_cache_served_op_is_marked_never_above_100_percent():
    sheet = Ceilings(device="cuda", memory_bandwidth_bytes_per_s=4.8e12, peak_flops_per_s={"float32": 6.7e13},
                     launch_overhead_s=5e-6, cache_bytes=60 * 2**20, source="datasheet")
    op = place_op(_relu(time_s=9.0e-6), sheet)
    assert op.roof == "cache-unknown" and op.efficiency == 1.0 and not op.above_roof
    summary = summarize([op, place_op(_relu(time_s=2e-5), sheet)])
    assert summary.ops_from_cache == 1 and summary.ops_above_roof == 0
