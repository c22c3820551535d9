"""attribute()'s statistics on a hand-written trace, every field worked out by hand: kernels by correlation and by
External id, a kernel launched straight under ProfilerStep (never a target: the launch gets an op of its own,
DIRECT_LAUNCH_OP, as a user's Triton kernel called from Python does), an External id of 0 (never a key),
CUDA-graph replays, aten vs other targets, the top unattributed names, syncs, and each step's window (stretched by
a kernel running past the step, never past the next step's start), busy time (overlapping streams merged, any step's
kernels) and idle time."""

from __future__ import annotations

import json

import pytest

from roofline.analyze.attribution import attribute
from roofline.capture.kineto import load_trace
from roofline.capture.trace_model import DIRECT_LAUNCH_OP


def x(cat, name, ts, dur, pid=1, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def k(name, ts, dur, stream=7, **args):
    return x("kernel", name, ts, dur, pid=0, tid=stream, **args)


EVENTS = [
    x("user_annotation", "ProfilerStep#1", 0.0, 100.0, **{"External id": 50}),
    x("user_annotation", "ProfilerStep#2", 100.0, 100.0),
    x("cuda_runtime", "cudaLaunchKernel", 5.0, 1.0, correlation=3, **{"External id": 50}),  # under the step only
    x("cpu_op", "aten::mm", 10.0, 20.0, **{"External id": 1}),
    x("cuda_runtime", "cudaLaunchKernel", 12.0, 1.0, correlation=1),
    x("cpu_op", "triton_poi_fused_add_0", 40.0, 10.0, **{"External id": 2}),
    x("cuda_driver", "cuLaunchKernel", 41.0, 1.0, correlation=2),
    x("cpu_op", "aten::add", 94.0, 5.0, **{"External id": 0}),
    x("cuda_runtime", "cudaLaunchKernel", 95.0, 1.0, correlation=4),
    x("cpu_op", "CUDAGraph::replay", 120.0, 10.0),
    x("cuda_runtime", "cudaGraphLaunch", 121.0, 1.0, correlation=5),
    k("k_mm", 30.0, 10.0, correlation=1),
    k("k_mm2", 35.0, 10.0, stream=8, correlation=1),
    k("triton_k", 50.0, 5.0, correlation=2),
    k("ext_k", 60.0, 2.0, correlation=99, **{"External id": 1}),
    k("orphan", 90.0, 4.0, correlation=3),
    k("late", 98.0, 10.0, correlation=4),
    k("g1", 130.0, 3.0, correlation=5),
    k("g2", 134.0, 3.0, correlation=5),
    k("lonely", 150.0, 1.0),
    k("ext0", 160.0, 1.0, **{"External id": 0}),
    x("cuda_sync", "Stream Sync", 25.0, 1.0, pid=0, tid=7, correlation=1),
    x("cuda_sync", "Event Sync", 26.0, 1.0, pid=0, tid=7, **{"External id": 77}),
]


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": EVENTS}))
    return load_trace(path)


def test_totals_and_ways_of_attribution(trace):
    s = attribute(trace)
    assert (s.kernels, s.kernels_attributed, s.by_correlation, s.by_external_id) == (10, 8, 7, 1)
    assert s.total_kernel_us == pytest.approx(49) and s.attributed_us == pytest.approx(47)
    assert s.unattributed_us == pytest.approx(2) and s.share == pytest.approx(47 / 49)
    assert s.aten_us == pytest.approx(32) and s.other_us == pytest.approx(15) and s.graph_replay_us == pytest.approx(6)
    assert list(s.other_targets.items()) == [("CUDAGraph::replay", 6.0), ("triton_poi_fused_add_0", 5.0),
                                             (DIRECT_LAUNCH_OP, 4.0)]
    assert list(s.unattributed_names.items()) == [("lonely", 1.0), ("ext0", 1.0)]
    assert s.syncs_attributed == 1 and attribute(trace) is s


def test_ops_get_their_kernels_and_subtree_times(trace):
    attribute(trace)
    by = {op.name: op for op in trace.ops}
    names = [kr.name for kr in trace.kernels]
    assert [names[i] for i in by["aten::mm"].kernel_ids] == ["k_mm", "k_mm2", "ext_k"]
    assert by["aten::mm"].self_kernel_us == pytest.approx(22) and by["aten::mm"].total_kernel_us == pytest.approx(22)
    assert by["ProfilerStep#1"].self_kernel_us == 0 and by["ProfilerStep#1"].total_kernel_us == pytest.approx(41)
    assert by["ProfilerStep#2"].total_kernel_us == pytest.approx(6)
    assert [names[i] for i in by["CUDAGraph::replay"].kernel_ids] == ["g1", "g2"]
    orphan = next(kr for kr in trace.kernels if kr.name == "orphan")
    direct = by[DIRECT_LAUNCH_OP]
    assert (direct.ts_us, direct.dur_us, trace.ops[direct.parent].name) == (5.0, 1.0, "ProfilerStep#1")
    assert orphan.op == direct.index and next(kr for kr in trace.kernels if kr.name == "ext0").op == -1
    assert [sy.op for sy in trace.syncs] == [by["aten::mm"].index, -1]


def test_step_windows_busy_and_idle(trace):
    first, second = attribute(trace).steps
    assert (first.number, first.kernels) == (1, 6)
    assert first.window_us == pytest.approx(100)  # the late kernel (98-108) is cut at the next step's start
    assert first.kernel_us == pytest.approx(41) and first.busy_us == pytest.approx(28)  # 30-45 merged, 98-100
    assert first.idle_us == pytest.approx(72)
    assert (second.number, second.kernels) == (2, 4)
    assert second.window_us == pytest.approx(100) and second.kernel_us == pytest.approx(8)
    # the late kernel's 8 us in this step keep the GPU busy, though step 1 launched it
    assert second.busy_us == pytest.approx(16) and second.idle_us == pytest.approx(84)


def test_last_step_window_runs_to_its_last_kernel(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": [
        x("user_annotation", "ProfilerStep#1", 0.0, 50.0), x("cpu_op", "aten::mm", 10.0, 5.0),
        x("cuda_runtime", "cudaLaunchKernel", 11.0, 1.0, correlation=1), k("k", 60.0, 30.0, correlation=1)]}))
    (only,) = attribute(load_trace(path)).steps
    assert only.window_us == pytest.approx(90) and only.busy_us == pytest.approx(30)
    assert only.idle_us == pytest.approx(60)
