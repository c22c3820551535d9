"""A report of several steps names its top calls summed over them (Summary.top_calls), not one call per step."""

import pytest

from roofline.analyze.roofline import summarize, top_calls
from roofline.report import OpRecord


def _op(name, step, time_s, shapes, *, bound="memory", efficiency=0.5, modeled=True, module="m.fc"):
    return OpRecord(name=name, module=module, dtype="float16", flops=2e6, bytes=1e6, time_s=time_s, step=step,
                    input_shapes=shapes, bound=bound, efficiency=efficiency, modeled=modeled, source="model.py:3")


def test_calls_are_summed_over_steps_whether_or_not_their_shape_lists_are_shared():
    shared = [[8, 8]]
    ops = [_op("aten::add", 0, 1e-3, shared), _op("aten::add", 1, 3e-3, [[8, 8]], bound="launch", efficiency=1.0),
           _op("aten::add", 1, 1e-3, shared),  # a second call of the same shapes in step 1
           _op("aten::add", 0, 9e-4, [[4, 4]]), _op("aten::mm", 1, 2e-3, shared, modeled=False)]
    add, mm, small = top_calls(ops)
    assert (add.name, add.calls, add.steps, add.time_s) == ("aten::add", 3, 2, pytest.approx(5e-3))
    assert add.bound == "launch", "the bound of most of its time (3 of 5 ms)"
    assert add.efficiency == pytest.approx((0.5 * 1e-3 + 1.0 * 3e-3 + 0.5 * 1e-3) / 5e-3)
    assert add.flops == 6e6 and add.achieved_flops_per_s == pytest.approx(6e6 / 5e-3) and add.arithmetic_intensity == 2
    assert (mm.name, mm.modeled) == ("aten::mm", False)
    assert (small.calls, small.time_s) == (1, 9e-4), "other shapes are another call"


def test_one_steps_ops_have_no_calls_table_and_the_summary_carries_them_for_several():
    one = [_op("aten::add", 0, 1e-3, [[8]]), _op("aten::add", 0, 1e-3, [[8]])]
    assert top_calls(one) == [] and summarize(one).top_calls == []
    two = one + [_op("aten::add", 1, 1e-3, [[8]])]
    assert [c.calls for c in summarize(two).top_calls] == [3]
    many = [_op(f"aten::op{i}", i % 2, 1e-3 * (i + 1), [[i]]) for i in range(40)]
    calls = top_calls(many, n=5)
    assert [c.name for c in calls] == [f"aten::op{i}" for i in (39, 38, 37, 36, 35)]


def test_host_time_by_op_sums_each_name_longest_first_and_leaves_out_names_without_host_time():
    from roofline.analyze.roofline import host_time_by_op

    ops = [OpRecord("aten::mm", cpu_time_s=1e-3), OpRecord("aten::add", cpu_time_s=3e-3, count=2),
           OpRecord("aten::add", cpu_time_s=1e-3), OpRecord("aten::view", cpu_time_s=0.0)]
    rows, total = host_time_by_op(ops)
    assert [(r.name, r.calls, r.cpu_time_s) for r in rows] == [("aten::add", 3, pytest.approx(4e-3)),
                                                                ("aten::mm", 1, pytest.approx(1e-3))]
    assert total == pytest.approx(5e-3)
