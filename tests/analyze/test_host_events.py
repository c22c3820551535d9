"""What the profiler recorded per op (analyze/host_events.py): aten events (top-level ones apart), CUDA runtime
calls and the host gap before each op, on a hand-written Kineto trace with runtime calls and on a real CPU profile
(no runtime calls)."""

from __future__ import annotations

import json

import pytest
import torch

from roofline.analyze.pipeline import report_from_trace
from roofline.capture.kineto import load_trace
from roofline.report import Ceilings

CEIL = Ceilings(device="cuda", device_name="NVIDIA H200", memory_bandwidth_bytes_per_s=4.8e12,
                peak_flops_per_s={"float32": 67e12}, launch_overhead_s=5e-6)


def _x(cat, name, ts, dur, pid=1, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _step(first: int, number: int) -> list[dict]:
    """One step of 100 us from ``first``: a convolution (3 aten events, 3 runtime calls: a cuDNN one holds 2 and
    a driver call, one of them in the driver's category), then a marker and a runtime call in no op (they count
    for the next op), then an add whose launch sits just after its span but carries its External id, then a relu
    with one launch inside."""
    t = first
    ext = number * 10
    conv = {"Input Dims": [[1, 4, 8, 8], [4, 4, 3, 3]], "Input type": ["float", "float"]}
    return [
        _x("user_annotation", f"ProfilerStep#{number}", t, 100),
        _x("cpu_op", "aten::conv2d", t + 5, 30, **{"External id": ext + 1}, **conv),
        _x("cpu_op", "aten::convolution", t + 6, 28, **{"External id": ext + 2}, **conv),
        _x("cpu_op", "aten::cudnn_convolution", t + 7, 26, **{"External id": ext + 3}, **conv),
        _x("cuda_runtime", "cudaGetDevice", t + 8, 1, correlation=ext + 101, **{"External id": ext + 3}),
        _x("cuda_driver", "cuLaunchKernel", t + 10, 2, correlation=ext + 102, **{"External id": ext + 3}),
        _x("cuda_runtime", "cudaLaunchKernel", t + 20, 2, correlation=ext + 103, **{"External id": ext + 3}),
        _x("user_annotation", "marker", t + 40, 2),
        _x("cuda_runtime", "cudaStreamIsCapturing", t + 42, 1, correlation=ext + 106),
        _x("cpu_op", "aten::add", t + 45, 10, **{"External id": ext + 4, "Input Dims": [[8], [8]],
                                                 "Input type": ["float", "float"]}),
        _x("cuda_runtime", "cudaLaunchKernel", t + 56, 1, correlation=ext + 104, **{"External id": ext + 4}),
        _x("cpu_op", "aten::relu", t + 60 + number, 5, **{"External id": ext + 5, "Input Dims": [[8]],
                                                           "Input type": ["float"]}),
        _x("cuda_runtime", "cudaLaunchKernel", t + 61 + number, 1, correlation=ext + 105,
           **{"External id": ext + 5}),
        _x("kernel", "conv_kernel", t + 30, 20, pid=0, tid=7, correlation=ext + 102, device=0, stream=7),
        _x("kernel", "add_kernel", t + 60, 2, pid=0, tid=7, correlation=ext + 104, device=0, stream=7),
        _x("kernel", "relu_kernel", t + 70, 2, pid=0, tid=7, correlation=ext + 105, device=0, stream=7),
    ]


def test_runtime_calls_aten_events_and_gaps_per_op_of_each_step(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": _step(0, 1) + _step(200, 2)}))
    report = report_from_trace(load_trace(path), CEIL)
    rows = [(op.name, op.step, op.profiled_events, op.runtime_calls) for op in report.ops]
    # The op is aten::convolution (conv2d is composite), which holds cudnn_convolution and its 3 calls
    # and conv2d, outside the chosen subtree, counts for it as the op that starts next
    assert rows == [("aten::convolution", 0, 3, 3), ("aten::add", 0, 2, 2), ("aten::relu", 0, 1, 1),
                    ("aten::convolution", 1, 3, 3), ("aten::add", 1, 2, 2), ("aten::relu", 1, 1, 1)]
    # Top-level events (no enclosing event but the step's annotation): conv2d, charged to the convolution; the add
    # and the marker before it; the relu
    assert [op.profiled_top_level for op in report.ops] == [1, 2, 1] * 2
    # Gaps: the convolution from its step's start (6 us), add after its end at 34 (11 us), relu after add's end
    # at 55: 5 + the step's number us (the relu starts one us later in step 2).
    assert [round(op.host_gap_s * 1e6, 6) for op in report.ops] == [6, 11, 6, 6, 11, 7]


def test_a_real_cpu_profile_has_no_runtime_calls_and_counts_nested_aten_calls(cpu_ceilings):
    from roofline.analyze.live import analyze_model

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
    report = analyze_model(model, (torch.randn(4, 16),), device="cpu", ceilings=cpu_ceilings, iters=2)
    # the recorded ops (dispatch-level), then each aten::linear's own host time outside its t and addmm (a CPU)
    assert [op.name for op in report.ops] == ["aten::t", "aten::addmm", "aten::relu", "aten::t", "aten::addmm",
                                              "aten::linear", "aten::linear"]
    assert [op.runtime_calls for op in report.ops] == [0] * 7
    # aten::t holds aten::transpose, which holds aten::as_strided; the linear's row counts itself alone
    assert [op.profiled_events for op in report.ops if op.name == "aten::t"] == [3, 3]
    assert [op.profiled_events for op in report.ops if op.name == "aten::linear"] == [1, 1]
    # the model's own calls are top-level: each linear and the relu; t and addmm are nested in a linear
    assert [op.profiled_top_level for op in report.ops] == [0, 0, 1, 0, 0, 1, 1]
    # the Python before each of the model's calls is the gap of its row; inside a linear, its own time is its row's
    assert [op.host_gap_s > 0 for op in report.ops] == [False, False, True, False, False, True, True]


def test_a_whole_traces_counts_are_the_sum_of_its_ops_counts(tmp_path):
    from roofline.analyze.host_events import trace_counts

    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": _step(0, 1)}))
    trace = load_trace(path)
    report = report_from_trace(trace, CEIL)
    # events (the step annotation apart), top-level events, runtime calls: as the report's ops hold them
    assert trace_counts(trace) == (6, 4, 6)
    assert (sum(op.profiled_events for op in report.ops), sum(op.profiled_top_level for op in report.ops),
            sum(op.runtime_calls for op in report.ops)) == (6, 4, 6)


def test_a_real_training_steps_ops_hold_every_event_of_their_step_as_the_references_count_them(tmp_path,
                                                                                                 cpu_ceilings):
    """The profiler-cost fit counts its reference loops with trace_counts; a report's ops must add up to the same
    counts per step, autograd's engine frames (top-level, in no op) included, or the fitted costs would be charged
    to counts of another kind."""
    from roofline.analyze.host_events import is_top_level, trace_counts
    from roofline.analyze.live import make_step, profile_steps

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8))
    step = make_step(model, (torch.randn(4, 16),), backward=True, loss_fn=lambda out: out.square().mean())
    path = tmp_path / "t.json"
    profile_steps(step, torch.device("cpu"), 2, path)
    trace = load_trace(path)
    report = report_from_trace(trace, cpu_ceilings)
    for s in range(len(trace.steps)):
        events = [j for j, ev in enumerate(trace.ops) if ev.step == s and not ev.name.startswith("ProfilerStep#")]
        ops = [op for op in report.ops if op.step == s]
        engine = sum(is_top_level(trace, j) and trace.ops[j].name.startswith("autograd::engine") for j in events)
        assert engine >= 4  # the backward's nodes, run by the engine, in no report op
        assert sum(op.profiled_events for op in ops) == len(events)
        assert sum(op.profiled_top_level for op in ops) == sum(is_top_level(trace, j) for j in events)
    assert trace_counts(trace)[:2] == (sum(op.profiled_events for op in report.ops),
                                       sum(op.profiled_top_level for op in report.ops))
