"""The excess-traffic rule on the H200 ncu fixtures: cross_entropy's softmax and the big matmul are named with their
excess ratio and a saving no larger than their time above the roofline; the streaming ops are not named."""

from __future__ import annotations

import pytest
from ncu_cases import CASES, DATA, EXCESS, report_of

from roofline.analyze.ncu_join import join_ncu
from roofline.capture.ncu_csv import read_ncu_csv
from roofline.doctor import diagnose
from roofline.doctor.rules.excess_traffic import extra_time_s, fix_for
from roofline.report import Ceilings, OpRecord

H200 = Ceilings(device="cuda", device_name="NVIDIA H200", memory_bandwidth_bytes_per_s=4.8e12,
                peak_flops_per_s={"float16": 989e12, "float32": 67e12})


def _joined(name):
    case = EXCESS[name][0] if name in EXCESS else CASES[name]
    ncu = read_ncu_csv(DATA / "ncu_h200" / f"{name}.csv.gz")
    report = report_of(case, [k.name for k in ncu])
    report.ceilings = H200
    for op, dtype in zip(report.ops, ["float32" if name == "cross_entropy" else "float16"] * len(report.ops)):
        op.dtype = dtype
    times = {k.name: k.metrics["gpu__time_duration.sum"] for k in ncu}
    for op in report.ops:
        op.time_s = sum(times[k.name] for k in report.kernels if report.ops[k.op_index] is op)
    join_ncu(report, ncu)
    return report


@pytest.mark.parametrize("name,ratio", [("cross_entropy", 1.46), ("mm", 8.4)])
def test_ops_moving_more_than_their_minimum_are_named_with_the_ratio(name, ratio):
    report = _joined(name)
    found = [f for f in diagnose(report, rules=["excess-traffic"])]
    assert len(found) == 1
    f = found[0]
    assert f.evidence["excess_ratio"] == pytest.approx(ratio, abs=0.01)
    assert f"{ratio:.2f}"[:3] in f.title
    op = next(op for op in report.ops if op.name == f.evidence["op"])
    c = report.ceilings
    floor = max(op.flops / c.peak_for(op.dtype), op.bytes / c.memory_bandwidth_bytes_per_s)
    assert 0 < f.estimated_savings_s <= op.time_s - floor + 1e-12
    assert f.estimated_savings_s <= (op.measured.dram_bytes - op.bytes) / c.memory_bandwidth_bytes_per_s


def test_the_softmax_gets_a_fused_loss_and_the_matmul_a_tiling_fix():
    assert "cross-entropy" in fix_for(OpRecord("aten::_log_softmax"))
    assert "tiles" in fix_for(OpRecord("aten::mm"))
    strided = OpRecord("aten::clone", input_shapes=[[64, 64]], input_strides=[[1, 64]])
    assert "strided" in fix_for(strided)
    assert "indices" in fix_for(OpRecord("aten::embedding"))


@pytest.mark.parametrize("name", ["add", "softmax", "transpose_copy", "embedding", "layer_norm"])
def test_streaming_ops_at_their_minimum_are_not_named(name):
    report = _joined(name)
    assert diagnose(report, rules=["excess-traffic"]) == []


def test_silent_without_counters_and_zero_saving_without_a_memory_roof():
    report = _joined("mm")
    op = next(op for op in report.ops if op.name == "aten::mm")
    report.ncu = None
    assert diagnose(report, rules=["excess-traffic"]) == []
    report.ceilings = Ceilings()
    assert extra_time_s(report, op) == 0.0


def test_tiny_ops_with_large_ratios_are_not_named():
    """The HF Llama forward's rotary-embedding casts read 168x their 192 bytes (a DRAM burst for a few values):
    ratios on kilobytes are granularity, not a fix worth making, so the 1 MiB extra-bytes floor keeps them out."""
    from ncu_cases import H200 as TRACES

    from roofline.analyze.trace_file import analyze_trace_file

    report = analyze_trace_file(TRACES / "llama_tiny_fwd_fp16_b4_s512.json.gz")
    join_ncu(report, read_ncu_csv(DATA / "ncu_h200" / "hf_llama_tiny_fwd_fp16_b4_s512.csv.gz"))
    assert max(op.measured.excess_ratio for op in report.ops if op.measured and op.measured.excess_ratio) > 100
    assert diagnose(report, rules=["excess-traffic"]) == []
