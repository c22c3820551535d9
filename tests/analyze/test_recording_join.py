"""report_from_trace with a counting pass, on a hand-written two-step trace: recorded ops matched to events by
name, phase and shapes (two Linears of different shapes each get their own event), each op's time the median of
its subtree's kernel time over the steps, host time and start from the last step, an op the trace lacks counted
at 0 s and said so, an event the recording lacks kept as an extra row, fp32 matmuls on TF32 kernels judged
against the TF32 roof. torch-free: the recording is built by hand."""

from __future__ import annotations

import json

import pytest

from roofline.analyze.attribution import attribute
from roofline.analyze.pipeline import report_from_trace
from roofline.capture.kineto import load_trace
from roofline.capture.recording import OpRecording, RecordedOp, Tf32Flags
from roofline.count import count_op
from roofline.count.meta import TensorMeta as T
from roofline.report import Ceilings

CEIL = Ceilings(device="cuda", device_name="H200", memory_bandwidth_bytes_per_s=4.8e12,
                peak_flops_per_s={"float32": 67e12, "tfloat32": 494.7e12}, launch_overhead_s=5e-6)
F = ["float", "float", "float"]


def x(cat, name, ts, dur, pid=1, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _events():
    ev = []
    for s in range(2):
        o, e, c = 100.0 * s, 10 * (s + 1), 100 + 10 * s
        ev += [x("user_annotation", f"ProfilerStep#{s + 1}", o, 100.0),
               x("cpu_op", "aten::linear", o + 5, 20.0, **{"External id": e, "Input Dims": [[4, 8], [16, 8], [16]],
                                                          "Input type": F}),
               x("cpu_op", "aten::addmm", o + 7, 10.0, **{"External id": e + 1,
                                                         "Input Dims": [[16], [4, 8], [8, 16]], "Input type": F}),
               x("cuda_runtime", "cudaLaunchKernel", o + 8, 2.0, correlation=c, **{"External id": e + 1}),
               x("cpu_op", "aten::relu", o + 30, 5.0, **{"External id": e + 2, "Input Dims": [[4, 16]],
                                                        "Input type": ["float"]}),
               x("cuda_runtime", "cudaLaunchKernel", o + 31, 1.0, correlation=c + 1, **{"External id": e + 2}),
               x("cpu_op", "aten::linear", o + 40, 20.0, **{"External id": e + 3, "Input Dims": [[4, 16], [2, 16], [2]],
                                                           "Input type": F}),
               x("cpu_op", "aten::addmm", o + 42, 10.0, **{"External id": e + 4,
                                                          "Input Dims": [[2], [4, 16], [16, 2]], "Input type": F}),
               x("cuda_runtime", "cudaLaunchKernel", o + 43, 1.0, correlation=c + 2, **{"External id": e + 4}),
               x("cpu_op", "aten::add", o + 70, 5.0, **{"External id": e + 5, "Input Dims": [[4, 2], [4, 2], []],
                                                       "Input type": ["float", "float", "Scalar"]}),
               x("cuda_runtime", "cudaLaunchKernel", o + 71, 1.0, correlation=c + 3, **{"External id": e + 5}),
               x("kernel", "cutlass_80_tensorop_s1688gemm_64x64", o + 50, 3.0 + s, pid=0, tid=7, correlation=c),
               x("kernel", "relu_kernel", o + 56, 1.0, pid=0, tid=7, correlation=c + 1),
               x("kernel", "ampere_sgemm_32x32", o + 60, 2.0, pid=0, tid=7, correlation=c + 2),
               x("kernel", "add_kernel", o + 75, 1.0, pid=0, tid=7, correlation=c + 3)]
    return ev


def _rec(name, args, outputs, module, source):
    return RecordedOp(name, args, outputs, count_op(name, args, None, outputs), "float32", module, "forward", source)


def _recording(tf32=False):
    x1, w1, b1 = T((4, 8), "float32"), T((16, 8), "float32"), T((16,), "float32")
    h = T((4, 16), "float32")
    w2, b2, y = T((2, 16), "float32"), T((2,), "float32"), T((4, 2), "float32")
    return OpRecording([_rec("aten::linear", [x1, w1, b1], [h], "fc1", "m.py:1"),
                        _rec("aten::relu", [h], [h], "act", "m.py:2"),
                        _rec("aten::linear", [h, w2, b2], [y], "fc2", "m.py:3"),
                        _rec("aten::softmax", [y, -1], [y], "head", "m.py:4")], Tf32Flags(matmul=tf32))


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": _events()}))
    trace = load_trace(path)
    attribute(trace)
    return trace


def test_recorded_ops_get_their_own_events_and_median_times(trace):
    report = report_from_trace(trace, CEIL, _recording())
    names = [(op.name, op.module) for op in report.ops]
    assert names == [("aten::linear", "fc1"), ("aten::relu", "act"), ("aten::linear", "fc2"),
                     ("aten::softmax", "head"), ("aten::add", "")]
    fc1, act, fc2, head, extra = report.ops
    assert fc1.time_s == pytest.approx(3.5e-6)  # median of 3 us and 4 us
    assert act.time_s == pytest.approx(1e-6) and fc2.time_s == pytest.approx(2e-6)
    assert fc1.flops == 2 * 4 * 8 * 16 and fc2.flops == 2 * 4 * 16 * 2
    assert fc1.kernels == ["cutlass_80_tensorop_s1688gemm_64x64"] and fc2.kernels == ["ampere_sgemm_32x32"]
    assert fc1.cpu_time_s == pytest.approx(20e-6) and fc1.start_s == pytest.approx(5e-6)
    assert fc1.external_id == 20 and fc2.external_id == 23 and fc1.source == "m.py:1"
    assert fc1.output_shapes == [[4, 16]] and fc1.input_shapes == [[4, 8], [16, 8], [16]]
    assert (head.time_s, head.start_s, head.external_id, head.kernels) == (0.0, None, None, [])
    assert extra.time_s == pytest.approx(1e-6) and extra.flops == 8 and extra.step == 1
    assert [op.index for op in report.ops] == [0, 1, 2, 3, 4]
    assert report.steps == 1
    assert "1 recorded op(s) found no event in the timed trace (time counted as 0): softmax x1" in report.summary.notes
    assert report.summary.timing_method.endswith("; median over 2 profiled step(s), counted in a separate pass")
    assert report.summary.wall_time_s == pytest.approx(100e-6)  # the steps' median, for a one-step report
    assert report.summary.idle_time_s == pytest.approx(92.5e-6)  # so is idle: 93 and 92 us (7 and 8 us of kernels)
    assert report.extra["tf32"] == {"cuda_matmul": False, "cudnn": False}
    assert fc1.dtype == "tfloat32" and fc2.dtype == "float32"  # judged by their kernels' names
    assert [k.op_index for k in report.kernels] == [0, 1, 2, 4]  # the last step's kernels only


def test_without_a_recording_every_step_is_kept(trace):
    report = report_from_trace(trace, CEIL)
    assert report.steps == 2 and report.summary.wall_time_s == pytest.approx(200e-6)
    assert report.summary.timing_method.endswith("; totals cover all 2 profiled steps")
    assert [op.step for op in report.ops] == [0, 0, 0, 0, 1, 1, 1, 1]
    # a composite linear shows its children: the addmm is the op
    assert [op.name for op in report.ops] == ["aten::addmm", "aten::relu", "aten::addmm", "aten::add"] * 2
    gemms = [op for op in report.ops if op.name == "aten::addmm"]
    assert [op.time_s for op in gemms] == pytest.approx([3e-6, 2e-6, 4e-6, 2e-6])
    assert [op.start_s for op in gemms] == pytest.approx([7e-6, 42e-6, 7e-6, 42e-6])
    assert [op.dtype for op in gemms] == ["tfloat32", "float32"] * 2
    assert report.summary.idle_time_s == pytest.approx(185e-6)  # two 100 us steps less 15 us of kernels
    assert report.summary.kernel_time_total_s == pytest.approx(15e-6)
    assert report.extra["trace"] == {"path": trace.path, "device_name": None, "compute_capability": None,
                                     "has_gpu": True, "steps": 2}
    assert [k.start_s for k in report.kernels] == pytest.approx([0, 6e-6, 10e-6, 25e-6, 100e-6, 106e-6, 110e-6, 125e-6])
