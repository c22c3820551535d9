"""Kernel -> op attribution on the real H200 traces, and its per-step totals on hand-made traces."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest

from roofline.analyze.attribution import AttributionStats, attribute
from roofline.capture.kineto import load_trace
from roofline.capture.trace_model import GRAPH_REPLAY_OP

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"
FIXTURES = sorted(p.name for p in H200.glob("*.json.gz"))


@lru_cache(maxsize=None)
def _attributed(name: str):
    trace = load_trace(H200 / name)
    return trace, attribute(trace)


@pytest.mark.parametrize("name", FIXTURES)
def test_at_least_98_percent_of_kernel_time_attributed(name):
    trace, stats = _attributed(name)
    assert stats.total_kernel_us == pytest.approx(sum(k.dur_us for k in trace.kernels))
    assert stats.share >= 0.98, stats.unattributed_names
    assert stats.attributed_us == pytest.approx(stats.aten_us + stats.other_us)
    assert stats.attributed_us + stats.unattributed_us == pytest.approx(stats.total_kernel_us)


@pytest.mark.parametrize("name", FIXTURES)
def test_kernels_point_at_the_innermost_op_around_their_launch(name):
    trace, _ = _attributed(name)
    launches = {l.correlation: l for l in trace.launches}
    for kernel in trace.kernels:
        if kernel.op < 0:
            continue
        op = trace.ops[kernel.op]
        assert kernel.index in op.kernel_ids
        assert not op.name.startswith("ProfilerStep#")
        launch = launches.get(kernel.correlation)
        if launch is not None:
            assert op.ts_us <= launch.ts_us <= op.end_us
            assert not any(child.parent == op.index and child.ts_us <= launch.ts_us < child.end_us
                           for child in trace.ops[op.index + 1 : op.index + 50])


def test_attribute_is_idempotent():
    trace, stats = _attributed("resnet50_fwd_fp32_b32.json.gz")
    before = [op.self_kernel_us for op in trace.ops]
    assert attribute(trace) is stats
    assert [op.self_kernel_us for op in trace.ops] == before


def test_total_kernel_time_includes_children():
    trace, stats = _attributed("llama_tiny_fwd_fp16_b4_s512.json.gz")
    roots = [op for op in trace.ops if op.parent < 0]
    assert sum(op.total_kernel_us for op in roots) == pytest.approx(stats.attributed_us)
    linear = next(op for op in trace.ops if op.name == "aten::linear")
    assert linear.self_kernel_us == 0 and linear.total_kernel_us > 0


def test_compiled_triton_kernels_attributed_to_their_triton_ops():
    trace, stats = _attributed("llama_tiny_fwd_fp16_compiled.json.gz")
    triton = [k for k in trace.kernels if k.name.startswith("triton_")]
    assert len(triton) > 100
    assert all(k.op >= 0 for k in triton)
    for kernel in triton:
        assert trace.ops[kernel.op].name == kernel.name
    assert stats.other_us > stats.aten_us
    assert any(name.startswith("triton_") for name in stats.other_targets)


def test_training_trace_attributes_backward_and_optimizer_kernels():
    trace, stats = _attributed("llama_tiny_train_fp16_b2_s256.json.gz")
    backward_us = sum(k.dur_us for k in trace.kernels if k.op >= 0 and trace.ops[k.op].is_backward)
    optimizer = [k for k in trace.kernels if k.op >= 0 and trace.ops[k.op].is_optimizer]
    assert backward_us > 0.3 * stats.total_kernel_us
    assert optimizer and all(trace.ops[k.op].name.startswith("aten::_foreach_") or trace.ops[k.op].is_aten
                             for k in optimizer)
    assert any("multi_tensor_apply" in k.name for k in optimizer)
    memcpy = [k for k in trace.kernels if k.category != "kernel"]
    assert memcpy and sum(k.op >= 0 for k in memcpy) == len(memcpy)


@pytest.mark.parametrize("name", FIXTURES)
def test_per_step_kernel_time_and_idle(name):
    trace, stats = _attributed(name)
    assert [s.number for s in stats.steps] == [1, 2]
    for step in stats.steps:
        assert step.kernels > 0
        assert 0 < step.busy_us <= step.kernel_us + 1e-6
        assert step.idle_us == pytest.approx(step.window_us - step.busy_us)
    first, second = stats.steps
    assert first.kernels == second.kernels
    assert first.kernel_us == pytest.approx(second.kernel_us, rel=0.1)


def _write(tmp_path, events, **meta) -> Path:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, **meta, "traceEvents": events}))
    return path


def _x(cat, name, ts, dur, pid=1, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def test_idle_is_the_window_minus_the_union_of_kernels(tmp_path):
    events = [
        _x("user_annotation", "ProfilerStep#7", 0, 100),
        _x("cpu_op", "aten::add", 10, 10, **{"External id": 1}),
        _x("cuda_runtime", "cudaLaunchKernel", 12, 2, correlation=11, **{"External id": 1}),
        _x("cpu_op", "aten::mul", 30, 10, **{"External id": 2}),
        _x("cuda_runtime", "cudaLaunchKernel", 32, 2, correlation=12, **{"External id": 2}),
        _x("kernel", "add_kernel", 20, 30, pid=0, tid=7, correlation=11, device=0, stream=7),
        _x("kernel", "mul_kernel", 40, 20, pid=0, tid=7, correlation=12, device=0, stream=7),
        _x("kernel", "orphan", 150, 5, pid=0, tid=7, correlation=99, device=0, stream=7),
    ]
    trace = load_trace(_write(tmp_path, events))
    stats = attribute(trace)
    assert isinstance(stats, AttributionStats)
    assert [trace.ops[k.op].name if k.op >= 0 else None for k in trace.kernels] == ["aten::add", "aten::mul", None]
    assert stats.unattributed_names == {"orphan": 5}
    assert stats.share == pytest.approx(50 / 55)
    (step,) = stats.steps
    assert step.number == 7 and step.kernels == 2
    assert step.kernel_us == 50 and step.busy_us == 40 and step.window_us == 100 and step.idle_us == 60


def test_external_id_fallback_and_profiler_step_never_a_target(tmp_path):
    events = [
        _x("user_annotation", "ProfilerStep#1", 0, 100, **{"External id": 5}),
        _x("cpu_op", "aten::mm", 10, 10, **{"External id": 6}),
        _x("kernel", "gemm", 20, 5, pid=0, tid=7, **{"External id": 6}),
        _x("kernel", "stray", 40, 5, pid=0, tid=7, **{"External id": 5}),
    ]
    trace = load_trace(_write(tmp_path, events))
    stats = attribute(trace)
    assert trace.kernels[0].op == 1 and trace.kernels[1].op == -1
    assert stats.by_external_id == 1 and stats.by_correlation == 0


def test_rocm_trace_attributes_hip_launches(tmp_path):
    events = [
        _x("user_annotation", "ProfilerStep#3", 0, 100),
        _x("cpu_op", "aten::mm", 10, 20, **{"External id": 4, "Input Dims": [[64, 64], [64, 64]]}),
        _x("hip_runtime", "hipLaunchKernel", 12, 3, correlation=21, **{"External id": 4}),
        _x("cuda_runtime", "hipExtModuleLaunchKernel", 16, 3, correlation=22, **{"External id": 4}),
        _x("kernel", "Cijk_Ailk_Bljk_HHS_BH_MT64x64", 20, 8, pid=2, tid=1, correlation=21, device=0, stream=1),
        _x("kernel", "reduce_kernel", 30, 2, pid=2, tid=1, correlation=22, device=0, stream=1),
    ]
    props = [{"id": 0, "name": "AMD Instinct MI300X", "computeMajor": 9, "computeMinor": 4}]
    trace = load_trace(_write(tmp_path, events, deviceProperties=props))
    stats = attribute(trace)
    assert trace.device_name == "AMD Instinct MI300X" and trace.compute_capability == (9, 4)
    assert [trace.ops[k.op].name for k in trace.kernels] == ["aten::mm", "aten::mm"]
    assert stats.share == 1.0 and stats.by_correlation == 2


def test_cuda_graph_replay_goes_to_the_op_around_the_graph_launch(tmp_path):
    events = [
        _x("user_annotation", "ProfilerStep#1", 0, 100),
        _x("user_annotation", "replay_decoder", 5, 40),
        _x("cuda_runtime", "cudaGraphLaunch", 10, 5, correlation=50),
        _x("cuda_runtime", "cudaGraphLaunch", 60, 5, correlation=51),
        _x("kernel", "k1", 20, 3, pid=0, tid=7, correlation=50),
        _x("kernel", "k2", 24, 3, pid=0, tid=7, correlation=50),
        _x("kernel", "k3", 70, 3, pid=0, tid=7, correlation=51),
    ]
    trace = load_trace(_write(tmp_path, events))
    stats = attribute(trace)
    # the second launch, under the profiler step only, gets an op of its own (it was unattributed)
    assert [op.name for op in trace.ops] == ["ProfilerStep#1", "replay_decoder", GRAPH_REPLAY_OP]
    assert (trace.ops[2].ts_us, trace.ops[2].dur_us, trace.ops[2].parent) == (60, 5, 0)
    assert [k.op for k in trace.kernels] == [1, 1, 2]
    assert trace.ops[1].kernel_ids == [0, 1] and trace.ops[2].kernel_ids == [2]
    assert stats.graph_replay_us == 9 and stats.other_us == 9 and stats.unattributed_names == {}
