"""The predictor's arithmetic pinned branch by branch (analyze/predict.py, efficiency.py, whatif.py): every expected
figure below is worked by hand from the ops' FLOPs and bytes, the ceilings and the table entries given here."""

from __future__ import annotations

import pytest

from roofline.analyze.efficiency import (EfficiencyTable, Entry, _entry, bucket, dram_roofline_time_s, family, keys,
                                         learn_table, load_table, lookup, user_table_path, save_table)
from roofline.analyze.predict import _scaled, predict
from roofline.analyze.project import Change
from roofline.analyze.whatif import _pair, host_costs_for
from roofline.report import BoundChange, Ceilings, HostCosts, OpRecord, Report, Timing

GPU = Ceilings(device="cuda", device_name="GPU X", memory_bandwidth_bytes_per_s=1e12,
               peak_flops_per_s={"float32": 1e13}, launch_overhead_s=5e-6)
OTHER = Ceilings(device="cuda", device_name="GPU Z", memory_bandwidth_bytes_per_s=1e12,
                 peak_flops_per_s={"float32": 1e13}, launch_overhead_s=5e-6)
CPU = Ceilings(device="cpu", device_name="CPU Y", memory_bandwidth_bytes_per_s=1e10,
               peak_flops_per_s={"float32": 1e11}, launch_overhead_s=2e-6)
NONE = EfficiencyTable()


def _mm(m: int, k: int, n: int, **kw) -> OpRecord:
    return OpRecord(name="aten::mm", dtype="float32", flops=2.0 * m * k * n, bytes=float((m * k + k * n + m * n) * 4),
                    input_shapes=[[m, k], [k, n]], input_dtypes=["float32"] * 2, output_shapes=[[m, n]],
                    output_dtypes=["float32"], **kw)


def _mul(rows: int, cols: int, **kw) -> OpRecord:
    n = rows * cols
    return OpRecord(name="aten::mul", dtype="float32", flops=float(n), bytes=12.0 * n,
                    input_shapes=[[rows, cols]] * 2, input_dtypes=["float32"] * 2, output_shapes=[[rows, cols]],
                    output_dtypes=["float32"], **kw)


def _device_only(report: Report, table=NONE, **kw):
    return predict(report, table=table, host_costs=None, **kw)


def test_scaled_grows_at_the_tables_efficiency_capped_and_shrinks_keeping_the_measured_one():
    assert _scaled(1e-3, 1e-4, 2e-4, 0.5) == pytest.approx(1e-3 + 1e-4 / 0.5)  # below proportional 2e-3
    assert _scaled(1e-3, 1e-4, 2e-4, 10.0) == pytest.approx(1e-3 + 1e-4 / 4.0)  # efficiency capped at 4
    assert _scaled(1e-3, 1e-4, 2e-4, 0.01) == pytest.approx(2e-3)  # never slower than proportional
    assert _scaled(1e-3, 2e-4, 1e-4, 0.5) == pytest.approx(5e-4)  # shrinking: proportional
    assert _scaled(1e-3, 2e-4, 1e-4, 0.05) == pytest.approx(1e-3)  # the table expects it slower: capped at measured


def test_an_untimed_op_without_an_entry_runs_at_half_its_roof_with_a_2x_range():
    op = _mm(1000, 100, 100)  # 2e7 FLOP -> 2e-6 s at 1e13; 8.4e5 B -> 8.4e-7 s
    assert dram_roofline_time_s(op, GPU) == pytest.approx(2e-6)
    p = _device_only(Report(ceilings=GPU, ops=[op]))
    assert (p.step_time_s, p.low_s, p.high_s) == (pytest.approx(4e-6), pytest.approx(2e-6), pytest.approx(8e-6))
    assert p.notes == ["no host costs for this device on this machine: host time not modelled",
                       "ops the table has no entry for run at 50% of their roof"]


def test_an_untimed_op_with_an_entry_runs_at_its_quartiles():
    table = EfficiencyTable({"GPU X": {"mm|1e-06|float32": Entry(0.25, 0.4, 0.8, 3)}})
    p = _device_only(Report(ceilings=GPU, ops=[_mm(1000, 100, 100)]), table)
    assert (p.step_time_s, p.low_s, p.high_s) == (pytest.approx(5e-6), pytest.approx(2.5e-6), pytest.approx(8e-6))


def test_a_projected_timed_op_without_an_entry_keeps_its_measured_efficiency():
    op = _mm(1000, 100, 100, time_s=1e-5)  # rows = batch 2 x seq 500
    p = _device_only(Report(ceilings=GPU, ops=[op]), change=Change(batch=(2, 4), seq=(500, 500)))
    assert p.device_time_s == pytest.approx(2e-5)  # twice the FLOPs, same 20% of the roof
    assert "ops the table has no entry for on the target keep their measured efficiency" in p.notes


def test_small_ops_take_the_tables_time_per_call_never_above_what_they_measured():
    table = EfficiencyTable({"GPU X": {"mul|small|float32": Entry(1e-6, 2e-6, 5e-6, 4)}})
    untimed = _device_only(Report(ceilings=GPU, ops=[_mul(100, 10, count=2)]), table)  # 1.2e4 B: 1.2e-8 s
    assert (untimed.device_time_s, untimed.low_s, untimed.high_s) == (pytest.approx(4e-6), pytest.approx(2e-6),
                                                                      pytest.approx(1e-5))
    # measured at 3 us with 3.6e-6 s of roof, projected to an eighth of the rows: small, clamped at 3 us
    shrunk = _device_only(Report(ceilings=GPU, ops=[_mul(1000, 300, time_s=3e-6)]), table,
                          change=Change(batch=(8, 1), seq=(125, 125)))
    assert (shrunk.device_time_s, shrunk.low_s, shrunk.high_s) == (pytest.approx(2e-6), pytest.approx(1e-6),
                                                                   pytest.approx(3e-6))
    # no entry: a small op with work still runs at half its roof, a workless one takes no time
    small = _device_only(Report(ceilings=GPU, ops=[_mul(100, 10)]))
    assert small.device_time_s == pytest.approx(1.2e-8 / 0.5)
    workless = _device_only(Report(ceilings=GPU, ops=[OpRecord(name="aten::view", dtype="float32")]))
    assert workless.device_time_s == 0.0


def test_the_same_device_is_the_same_name_and_class_and_another_is_named_in_the_scenario():
    report = Report(ceilings=GPU, ops=[_mm(1000, 100, 100, time_s=1e-5)], step_time=Timing(median_s=2e-5, n=3))
    same = _device_only(report, ceilings=Ceilings(**{f: getattr(GPU, f) for f in GPU.__struct_fields__}))
    assert same.scenario == {} and same.measured_step_time_s == 2e-5 and same.device_time_s == 1e-5
    other = _device_only(report, ceilings=OTHER)
    assert other.scenario == {"device": "GPU X -> GPU Z"} and other.measured_step_time_s is None
    assert other.device_name == "GPU Z"
    cpu_named_alike = Ceilings(device="cpu", device_name="GPU X", memory_bandwidth_bytes_per_s=1e12,
                               peak_flops_per_s={"float32": 1e13})
    assert _device_only(report, ceilings=cpu_named_alike).scenario == {"device": "GPU X -> GPU X"}


def test_host_time_per_op_kind_module_entries_backward_ops_and_the_spread():
    host = HostCosts(device="cuda", dispatch_s={"mm": 10e-6, "mul": 2e-6, "item": 3e-6}, python_per_op_s=1e-6,
                     module_call_s=5e-7, backward_per_op_s=4e-6, spread=0.2)
    ops = [OpRecord(name="aten::add", module="a.b.c", dtype="float32", time_s=1e-7),  # median dispatch 3e-6
           OpRecord(name="aten::mul", module="a.x.y", dtype="float32", time_s=1e-7, count=2),
           OpRecord(name="aten::mul", module="a.x.y", dtype="float32", time_s=1e-7, phase="backward")]
    p = predict(Report(ceilings=GPU, ops=ops), table=NONE, host_costs=host)
    # add: 3e-6 + 1e-6 + 3 modules entered; mul: 2 x (2e-6 + 1e-6) + 2 entered (a shared); backward: 4e-6
    host_s = (4e-6 + 3 * 5e-7) + (2 * 3e-6 + 2 * 5e-7) + 4e-6
    assert p.bound == "host" and p.host_time_s == pytest.approx(host_s)
    assert p.step_time_s == pytest.approx(host_s + 1e-7)  # the last op runs once issued
    assert p.low_s == pytest.approx(0.8 * host_s + 1e-7) and p.high_s == pytest.approx(1.2 * host_s + 1e-7)
    serial = predict(Report(ceilings=CPU, ops=ops[2:]), table=NONE, host_costs=host)
    assert serial.host_time_s == pytest.approx(4e-6 - 3e-6)  # autograd's cost less the aten dispatch it holds


def test_dominant_ops_and_modules_order_by_the_bound_and_keep_eight():
    host = HostCosts(device="cpu", dispatch_s={"mul": 1e-6}, python_per_op_s=1e-6)
    ops = [OpRecord(name="aten::mul", module="m.a", dtype="float32", time_s=10e-6),
           OpRecord(name="aten::add", module="n", dtype="float32", time_s=1e-6, count=5)]
    p = predict(Report(ceilings=CPU, ops=ops), table=NONE, host_costs=host)
    # serial: mul 1e-6 host + 10e-6 device = 11e-6 ahead of add's 5 x 1e-6 host + 1e-6 device = 6e-6
    assert [(g.name, g.calls) for g in p.dominant] == [("aten::mul", 1), ("aten::add", 5)]
    assert p.dominant[0].measured_time_s == 10e-6 and p.dominant[1].host_time_s == pytest.approx(5e-6)
    assert [(m.module, m.measured_time_s) for m in p.modules] == [("m", 10e-6), ("n", 1e-6)]
    many = [OpRecord(name=f"aten::op{i}", dtype="float32", time_s=(i + 1) * 1e-6) for i in range(9)]
    top = predict(Report(ceilings=GPU, ops=many), table=NONE, host_costs=None).dominant
    assert [g.name for g in top] == [f"aten::op{i}" for i in range(8, 0, -1)]


def test_bound_changes_count_calls_and_skip_ops_that_take_no_time():
    big = _mm(1024, 1024, 1024, time_s=1e-3, bound="memory", count=0)  # 2.1e-4 s of compute roof on GPU Z
    workless = OpRecord(name="aten::fill_", dtype="float32", bound="memory", time_s=1e-6)
    p = _device_only(Report(ceilings=GPU, ops=[big, workless]), ceilings=OTHER)
    assert p.bound_changes == [BoundChange("aten::mm", "", 1, "memory", "compute")]


def test_an_fp32_matmul_takes_fp32_matmuls_efficiency_before_any_dtypes_of_its_kind():
    # issue 21: the H200's table had mm entries only for bf16/fp16, and an fp32 mm took their 0.94 of the roof
    mm32 = _mm(256, 256, 256)
    rt = 2e-5
    table = EfficiencyTable({"GPU X": {"mm|1e-05": Entry(0.9, 0.94, 0.96, 50),
                                       "matmul|1e-05|float32": Entry(0.3, 0.35, 0.4, 5)},
                             "cuda": {"mm|1e-05|float32": Entry(0.6, 0.7, 0.8, 9)}})
    # its dtype first, on the device's name then its class; then any dtype
    assert lookup(table, GPU, mm32, rt).q50 == 0.35
    del table.entries["GPU X"]["matmul|1e-05|float32"]
    assert lookup(table, GPU, mm32, rt).q50 == 0.7
    del table.entries["cuda"]["mm|1e-05|float32"]
    assert lookup(table, GPU, mm32, rt).q50 == 0.94
    # a bf16 mm pools with fp16 ones (the same tensor-core roof) before its family in bf16 and any dtype's mm
    table.entries["GPU X"].update({"mm|1e-05|16-bit": Entry(0.5, 0.55, 0.6, 3),
                                   "matmul|1e-05|bfloat16": Entry(0.1, 0.2, 0.3, 3)})
    assert lookup(table, GPU, OpRecord(name="aten::mm", dtype="bfloat16", flops=1.0, bytes=1.0), rt).q50 == 0.55


def test_efficiency_family_bucket_keys_and_roofline_time():
    def op(flops, nbytes, name="aten::add"):
        return OpRecord(name=name, dtype="float32", flops=flops, bytes=nbytes)

    assert [family(op(f, b)) for f, b in ((1, 2), (2, 2), (0, 5), (3, 0), (1, 0.5))] == \
        ["memory", "compute", "memory", "compute", "compute"]
    assert family(op(1, 1, "aten::convolution")) == "conv" and family(op(0, 0, "aten::view")) == "view"
    assert [bucket(t) for t in (0.0, 9.9e-7, 1e-6, 2e-5, 0.05, 5.0)] == \
        ["none", "small", "1e-06", "1e-05", "1e-02", "1e-01"]
    assert keys(op(1, 2), 2e-5) == ["add|1e-05|float32", "memory|1e-05|float32", "add|1e-05", "memory|1e-05",
                                    "*|1e-05"]
    half = OpRecord(name="aten::add", dtype="bfloat16", flops=1, bytes=2)
    assert keys(half, 2e-5)[:4] == ["add|1e-05|bfloat16", "add|1e-05|16-bit", "memory|1e-05|bfloat16",
                                    "memory|1e-05|16-bit"]
    assert keys(op(0, 0, "aten::view"), 0.0)[-1] == "view"
    assert dram_roofline_time_s(op(2.5e13, 3.5e12), GPU) == pytest.approx(3.5)  # bytes bound
    assert dram_roofline_time_s(op(3.5e13, 2.5e12), GPU) == pytest.approx(3.5)  # FLOPs bound
    assert dram_roofline_time_s(op(3.5e13, 2.5e12), Ceilings(memory_bandwidth_bytes_per_s=1e12)) == 2.5


def test_table_quartiles_and_the_user_table_in_the_cache_dir(tmp_path, monkeypatch):
    assert _entry([5.0, 1.0, 3.0, 2.0, 4.0]) == Entry(2.0, 3.0, 4.0, 5)
    assert _entry([7.0]) == Entry(7.0, 7.0, 7.0, 1)
    unmodeled = OpRecord(name="aten::foo", dtype="float32", time_s=6e-6, count=3, modeled=False)
    table = learn_table([("r", Report(ceilings=GPU, ops=[unmodeled]))])
    assert table.entries["GPU X"]["unmodeled"] == Entry(2e-6, 2e-6, 2e-6, 1)  # its time per call
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    assert user_table_path() == tmp_path / "efficiency-table.json"
    save_table(EfficiencyTable({"GPU X": {"mine": Entry(1, 2, 3, 4)}}), user_table_path())
    assert load_table().entries["GPU X"]["mine"] == Entry(1, 2, 3, 4)


def test_the_request_pairs_and_the_host_costs_for_a_device_this_machine_lacks(monkeypatch):
    assert _pair("seq", 1, None, keep_known=True) == (1, 1)  # seq 1: batch x seq is still how tokens are found
    assert _pair("seq", 0, None, keep_known=True) is None and _pair("seq", 512, None) is None
    assert _pair("batch", 1, 4) == (1, 4) and _pair("batch", 4, 1) == (4, 1)
    import torch

    import roofline.analyze.host_costs as host_costs

    asked = []
    monkeypatch.setattr(host_costs, "get_host_costs", lambda device: asked.append(device) or HostCosts(device=device))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert host_costs_for(CPU).device == "cpu"
    fallback = host_costs_for(Ceilings(device="cuda", device_name="GPU Q"))
    assert fallback.dispatch_s == {"*": 5e-6} and fallback.backward_per_op_s == 5e-6 and fallback.device == "cuda"
    assert host_costs_for(GPU).dispatch_s == {"*": 5e-6}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert host_costs_for(GPU).device == "cuda"
    assert asked == ["cpu", "cuda"]

