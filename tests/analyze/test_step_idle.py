"""GPU idle time when a step's kernels run past the next step's start (async work queued behind the host): each step
is idle over its own window only ([its start, the next step's start); the last to its last kernel's end), busy
wherever any step's kernel runs in it, so the steps' idle never adds up to more than the wall time they cover."""

from __future__ import annotations

import json

import pytest

from roofline.analyze.attribution import attribute
from roofline.analyze.pipeline import report_from_trace
from roofline.capture.kineto import load_trace
from roofline.report import Ceilings

CEIL = Ceilings(device="cuda", device_name="H200", memory_bandwidth_bytes_per_s=4.8e12,
                peak_flops_per_s={"float32": 67e12}, launch_overhead_s=5e-6)


def x(cat, name, ts, dur, pid=1, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _spilling_trace(tmp_path, kernels=((250.0, 10.0, 7, 0), (270.0, 10.0, 7, 0))):
    """Two 100 us steps, each launching one kernel (start, duration, stream, GPU) early in the step; by default they
    run long after the steps ended."""
    events = []
    for s, (at, dur, stream, device) in enumerate(kernels):
        o = 100.0 * s
        events += [x("user_annotation", f"ProfilerStep#{s + 1}", o, 100.0),
                   x("cpu_op", "aten::relu", o + 10, 5.0, **{"External id": s + 1, "Input Dims": [[64]],
                                                            "Input type": ["float"]}),
                   x("cuda_runtime", "cudaLaunchKernel", o + 11, 1.0, correlation=s + 1),
                   x("kernel", "relu_kernel", at, dur, pid=device, tid=stream, correlation=s + 1)]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return load_trace(path)


def test_kernels_spilling_into_the_next_step_are_idle_once(tmp_path):
    first, second = attribute(_spilling_trace(tmp_path)).steps
    # step 1's window stops where step 2 starts: its kernel (250-260) runs in step 2's window, which ends at 280
    assert (first.window_us, first.busy_us, first.idle_us) == pytest.approx((100, 0, 100))
    assert (second.window_us, second.busy_us, second.idle_us) == pytest.approx((180, 20, 160))
    assert (first.kernels, second.kernels) == (1, 1)  # kernels still belong to the step that launched them


def test_report_idle_never_exceeds_its_wall_time(tmp_path):
    report = report_from_trace(_spilling_trace(tmp_path), CEIL)
    s = report.summary
    assert s.wall_time_s == pytest.approx(280e-6)  # the host's 200 us and the last kernel's 80 us past it
    assert s.idle_time_s == pytest.approx(260e-6) and s.idle_time_s <= s.wall_time_s
    assert report.extra["step_windows_s"] == pytest.approx([100e-6, 180e-6])


def test_a_kernel_of_the_previous_step_on_another_stream_fills_the_gap(tmp_path):
    """Step 1's kernel (150-160, stream 7) overlaps step 2's own (155-165, stream 8): one GPU, busy 150-165."""
    trace = _spilling_trace(tmp_path, kernels=((150.0, 10.0, 7, 0), (155.0, 10.0, 8, 0)))
    first, second = attribute(trace).steps
    assert (first.busy_us, first.idle_us) == pytest.approx((0, 100))
    assert (second.window_us, second.busy_us, second.idle_us) == pytest.approx((100, 15, 85))


def test_each_gpu_is_busy_with_any_step_s_kernels_on_it(tmp_path):
    """Step 1's kernel on GPU 0 (150-160) runs in step 2, which launched only GPU 1's (155-175): GPU 0 is idle 90 us
    of step 2, not all of it; the most idle GPU's time is the step's."""
    trace = _spilling_trace(tmp_path, kernels=((150.0, 10.0, 7, 0), (155.0, 20.0, 7, 1)))
    first, second = attribute(trace).steps
    assert first.idle_by_device == pytest.approx({0: 100, 1: 100})
    assert second.idle_by_device == pytest.approx({0: 90, 1: 80}) and second.idle_us == pytest.approx(90)
    report = report_from_trace(trace, CEIL)
    assert report.extra["idle_by_device_s"] == pytest.approx({"0": 190e-6, "1": 180e-6})
    assert report.summary.idle_time_s == pytest.approx(190e-6) and report.summary.wall_time_s == pytest.approx(200e-6)
