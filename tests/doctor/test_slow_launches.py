"""Kernel launch calls that stall the host while the device sits idle: once (a kernel's first launch loading its
code: the warm-up rule) or again and again (the launch-stall rule); a launch that blocks while the device is busy
(a full launch queue) is neither."""

from __future__ import annotations

import pytest
from conftest import SHARED
from kineto_events import write_trace, x

from roofline.analyze.trace_file import analyze_trace_file
from roofline.analyze.warmup import slow_launches
from roofline.capture.kineto import load_trace
from roofline.doctor import diagnose

PUBLIC = SHARED / "fixtures" / "public-traces" / "hta"


def _step(number, t0, slow_add_us=5.0, busy_during_mul=False):
    """One step: a mul and an add, each launching its kernel; the add's launch takes ``slow_add_us``; with
    ``busy_during_mul`` the mul's launch takes 3 ms while a long kernel runs."""
    ext = number * 10
    mul_launch = 3000.0 if busy_during_mul else 5.0
    add_at = t0 + 20 + mul_launch
    events = [
        x("user_annotation", f"ProfilerStep#{number}", t0, add_at + slow_add_us + 30 - t0),
        x("cpu_op", "aten::mul", t0 + 10, mul_launch + 8, **{"External id": ext, "Input Dims": [[256], [256]],
                                                           "Input type": ["float", "float"]}),
        x("cuda_runtime", "cudaLaunchKernel", t0 + 12, mul_launch, correlation=ext, **{"External id": ext}),
        x("kernel", "mul_kernel", t0 + 14, 3000.0 if busy_during_mul else 2.0, pid=0, tid=7, correlation=ext,
          device=0, stream=7),
        x("cpu_op", "aten::add_", add_at, slow_add_us + 8, **{"External id": ext + 1, "Input Dims": [[256], [256]],
                                                              "Input type": ["float", "float"]}),
        x("cuda_runtime", "cudaLaunchKernel", add_at + 2, slow_add_us, correlation=ext + 1,
          **{"External id": ext + 1}),
        x("kernel", "add_kernel", add_at + slow_add_us + 4, 2.0, pid=0, tid=7, correlation=ext + 1, device=0,
          stream=7),
    ]
    return events, add_at + slow_add_us + 40


def _write(tmp_path, steps):
    events, t0 = [], 0.0
    for number, kwargs in enumerate(steps, start=1):
        step, t0 = _step(number, t0, **kwargs)
        events += step
    return write_trace(tmp_path, events, deviceProperties=[{"id": 0, "name": "NVIDIA H100 80GB HBM3"}])


def _findings(path, rule):
    report = analyze_trace_file(path)
    return [f for f in diagnose(report) if f.rule == rule]


def test_a_first_launch_stall_is_warm_up_with_its_excess_as_the_saving(tmp_path):
    path = _write(tmp_path, [{"slow_add_us": 4000.0}] + [{}] * 5)
    record = slow_launches(load_trace(path))
    assert record["calls"] == 1 and record["recurring_calls"] == 0
    assert record["launches"][0]["op"] == "aten::add_" and record["launches"][0]["kernel"] == "add_kernel"
    (finding,) = [f for f in _findings(path, "warm-up") if "launch" in f.title]
    assert "first launch" in finding.title and "ProfilerStep#1" in finding.title
    assert finding.estimated_savings_s == pytest.approx((4000.0 - 5.0) / 1e6)
    assert "CUDA_MODULE_LOADING=EAGER" in finding.fix
    assert _findings(path, "launch-stall") == []


def test_the_same_launch_stalling_in_every_step_is_a_launch_stall(tmp_path):
    path = _write(tmp_path, [{"slow_add_us": 2000.0}] * 4 + [{}] * 4)
    assert [f for f in _findings(path, "warm-up") if "launch" in f.title] == []
    (finding,) = _findings(path, "launch-stall")
    assert finding.evidence["calls"] == 4 and finding.evidence["steps"] == [1, 2, 3, 4]
    assert finding.estimated_savings_s == pytest.approx(4 * (2000.0 - 5.0) / 1e6)


def test_a_launch_that_waits_while_the_device_is_busy_is_neither(tmp_path):
    path = _write(tmp_path, [{"busy_during_mul": True}] + [{}] * 5)
    assert slow_launches(load_trace(path)) is None
    assert [f for f in _findings(path, "warm-up") if "launch" in f.title] == []
    assert _findings(path, "launch-stall") == []


def test_public_traces_name_their_stalled_launches():
    amd = PUBLIC / "amd_trace" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"
    queue = PUBLIC / "negative_queue_length_values_check" / "rank0.json.gz"
    if not amd.exists():
        pytest.skip("../shared is not here")
    (first,) = [f for f in _findings(amd, "warm-up") if "launch" in f.title]
    assert "hipLaunchKernel in aten::add_" in first.title and first.evidence["longest_s"] == pytest.approx(6.543109e-3)
    (stall,) = _findings(queue, "launch-stall")
    assert stall.evidence["call"] == "cudaLaunchKernel" and stall.evidence["calls"] >= 10
