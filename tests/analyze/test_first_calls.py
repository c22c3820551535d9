"""First calls in a trace without steps: an op whose first call took at least 10x its later calls (same name, same
input shapes) is set-up on first use inside the profiled window, recorded as report.extra["warmup"]'s "first-calls"
and named by the doctor's warm-up rule. torch 2.7.1's TransformerEncoder fast path on a CPU, profiled cold: the
first aten::_native_multi_head_attention spent 788 us outside its children (the second 35 us), which the report
placed as dispatch, and the launch-overhead rule called critical."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from roofline.analyze.join import children_index
from roofline.analyze.pipeline import report_from_trace
from roofline.analyze.trace_file import analyze_trace_file
from roofline.analyze.warmup import FIRST_CALL_FACTOR, first_call_outliers
from roofline.capture.kineto import load_trace
from roofline.doctor import diagnose
from roofline.report import Ceilings
from roofline.time_text import fmt_time

DATA = Path(__file__).resolve().parents[1] / "data" / "devtraces"
TRANSFORMER = DATA / "torch2.7.1_cpu_transformer_eval.json"
MHA = "aten::_native_multi_head_attention"
CPU = Ceilings(device="cpu", device_name="cpu", memory_bandwidth_bytes_per_s=3e10,
               peak_flops_per_s={"float32": 2e11}, launch_overhead_s=4e-6)


def _first_calls(report) -> dict | None:
    return next((e for e in report.extra.get("warmup") or [] if e["kind"] == "first-calls"), None)


def test_the_cold_transformers_first_attention_is_warm_up_not_launch_overhead():
    trace = load_trace(TRANSFORMER)
    children = children_index(trace)
    own = [op.dur_us - sum(trace.ops[k].dur_us for k in children[op.index]) for op in trace.ops if op.name == MHA]
    assert len(own) == 2 and own[0] >= FIRST_CALL_FACTOR * own[1]
    report = analyze_trace_file(TRANSFORMER)
    first, second = [op for op in report.ops if op.name == MHA]
    assert (first.modeled, first.bound) == (False, "unmodeled")
    assert (second.modeled, second.bound) == (True, "launch")
    record = _first_calls(report)
    mha = next(e for e in record["ops"] if e["name"] == MHA)
    assert mha["own_time"] and mha["later_calls"] == 1
    assert mha["excess_s"] * 1e6 == pytest.approx(own[0] - own[1])
    assert record["excess_s"] == pytest.approx(sum(e["excess_s"] for e in record["ops"]))
    assert any("first call that took at least 10x its later calls" in n for n in report.summary.notes)
    # the own-time note counts the rows that are first calls' own time (the attention's and a reshape's)
    own_time_firsts = sum(1 for e in record["ops"] if e["own_time"])
    (own_note,) = [n for n in report.summary.notes if "row(s) hold host time an op spent outside" in n]
    assert f"; {own_time_firsts} of them are an op's first call" in own_note

    findings = diagnose(report)
    assert not [f for f in findings if f.rule == "launch-overhead"]
    (warm,) = [f for f in findings if f.rule == "warm-up"]
    assert MHA in warm.title and fmt_time(record["excess_s"]) in warm.title
    assert warm.estimated_savings_s == pytest.approx(record["excess_s"])
    assert "median of its later calls" in warm.savings_method
    assert "warmup=1" in warm.fix


def _x(cat, name, ts, dur, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}


def _mm(ts, dur, n=64):
    return _x("cpu_op", "aten::mm", ts, dur, **{"Input Dims": [[n, n], [n, n]], "Input type": ["float", "float"]})


def _report(tmp_path, events):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return report_from_trace(load_trace(path), CPU)


@pytest.mark.parametrize("first_us", [20.0, 200.0])
def test_an_op_with_uniform_calls_has_no_first_call_warm_up(tmp_path, first_us):
    events = [_mm(0, first_us)] + [_mm(1000 * i, 20) for i in range(1, 5)]
    report = _report(tmp_path, events)
    record = _first_calls(report)
    if first_us < FIRST_CALL_FACTOR * 20:
        assert record is None
        assert not [f for f in diagnose(report) if f.rule == "warm-up"]
    else:
        assert record["calls"] == 1 and record["ops"][0]["excess_s"] == pytest.approx(180e-6)
        (warm,) = [f for f in diagnose(report) if f.rule == "warm-up"]
        assert warm.estimated_savings_s == pytest.approx(180e-6)


def test_other_shapes_are_other_ops(tmp_path):
    """A slow first call of one shape is not compared with another shape's calls."""
    events = [_mm(0, 500, n=512)] + [_mm(1000 * i, 20) for i in range(1, 5)]
    assert _first_calls(_report(tmp_path, events)) is None


def test_other_dtypes_are_other_ops(tmp_path):
    """A float64 product of the shapes later float32 calls have is slower by nature, not a first call's set-up."""
    double = _x("cpu_op", "aten::mm", 0, 500, **{"Input Dims": [[64, 64], [64, 64]], "Input type": ["double", "double"]})
    assert _first_calls(_report(tmp_path, [double] + [_mm(1000 * i, 20) for i in range(1, 5)])) is None


def test_a_trace_with_steps_is_left_to_its_first_iterations(tmp_path):
    steps = [_x("user_annotation", f"ProfilerStep#{i}", 1000 * i, 900) for i in range(4)]
    events = steps + [_mm(10, 500)] + [_mm(1000 * i + 10, 20) for i in range(1, 4)]
    assert _first_calls(_report(tmp_path, events)) is None


def test_the_first_call_is_the_earliest_and_a_zero_median_is_no_measure():
    groups = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    times = np.array([1.0, 10.0, 1.0, 5.0, 0.0, 40.0, 1.0, 3.0, 5.0])
    starts = np.array([2.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 2.0, 3.0])
    # group 0: its first (row 1) is 10x the median of 1 and 1; group 2: 40 vs the median of 1, 3 and 5 (3): 13x
    assert first_call_outliers(times, starts, groups) == [(1, 1.0, 2), (5, 3.0, 3)]
    assert first_call_outliers(times, np.array([0.0, 1.0, 2.0, 0.0, 1.0, 0.0, 1.0, 2.0, 3.0]), groups) == [
        (5, 3.0, 3)]
    assert first_call_outliers(times, starts, np.array([-1, -1, -1, 1, 1, 2, 2, 2, 7])) == [(5, 2.0, 2)]


def test_an_op_without_recorded_shapes_is_compared_with_none(tmp_path):
    """Without shapes, a slow first call may be a larger input: no first-call warm-up."""
    events = [_x("cpu_op", "aten::mm", 0, 500)] + [_x("cpu_op", "aten::mm", 1000 * i, 20) for i in range(1, 5)]
    assert _first_calls(_report(tmp_path, events)) is None
    assert first_call_outliers(np.array([10.0, 1.0]), np.array([0.0, 1.0]), np.array([-1, -1])) == []


def test_scalar_arguments_and_unrecorded_tensor_lists_tell_calls_apart(tmp_path):
    """aten::zeros' size is a scalar list ("Concrete Inputs"), not a shape; torch 2.1 records a tensor list's shapes
    as []: neither a larger zeros nor a stack of unknown tensors is taken for a first call's set-up."""
    def zeros(ts, dur, size):
        return _x("cpu_op", "aten::zeros", ts, dur, **{"Input Dims": [[], []], "Input type": ["ScalarList", "Scalar"],
                                                       "Concrete Inputs": [size, "6"]})

    def stack(ts, dur):
        return _x("cpu_op", "aten::stack", ts, dur, **{"Input Dims": [[], []], "Input type": ["TensorList", "Scalar"],
                                                       "Concrete Inputs": ["", "0"]})

    assert _first_calls(_report(tmp_path, [zeros(0, 500, "[4096, 4096]"), zeros(1000, 20, "[8]")])) is None
    assert _first_calls(_report(tmp_path, [zeros(0, 500, "[8]"), zeros(1000, 20, "[8]")]))["calls"] == 1
    assert _first_calls(_report(tmp_path, [stack(0, 500), stack(1000, 20)])) is None


def test_the_warm_up_finding_names_each_op_once_and_counts_the_rest():
    from roofline.doctor.rules.warm_up import check
    from roofline.report import Report

    def entry(name, excess):
        return {"name": name, "first_s": excess + 1e-6, "later_median_s": 1e-6, "excess_s": excess}

    ops = [entry("aten::a", 5e-4), entry("aten::a", 4e-4), entry("aten::b", 3e-4), entry("aten::c", 2e-4),
           entry("aten::d", 1e-4)]
    record = {"kind": "first-calls", "calls": 6, "factor": 10.0, "excess_s": 1.6e-3, "ops": ops}
    (finding,) = check(Report(kind="trace", extra={"warmup": [record]}))
    assert finding.title.startswith("the first calls of aten::a, aten::b, aten::c and 2 more op(s) took 1.6 ms more")
    assert finding.estimated_savings_s == 1.6e-3 and finding.evidence["calls"] == 6


def test_a_stepless_traces_span_is_its_first_op_start_to_its_last_end(tmp_path):
    """Without ProfilerStep marks and without a recording there is no wall time: the report gives the trace's span
    instead, from the first op's start to the last op's or kernel's end."""
    events = [_mm(10, 5), _mm(100, 20),
              _x("cuda_runtime", "cudaLaunchKernel", 102, 2, correlation=7, **{"External id": 2}),
              {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 150, "dur": 150,
               "args": {"correlation": 7, "device": 0, "stream": 7}}]
    report = _report(tmp_path, events)
    assert report.summary.wall_time_s is None
    assert report.summary.span_s == pytest.approx((300 - 10) * 1e-6)
