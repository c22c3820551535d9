"""Communication analysis on synthetic timelines and traces: classification, overlap, sizes, stragglers."""

import gzip
import json

import pytest

from roofline.analyze.communication import is_communication_kernel, is_communication_op
from roofline.distributed.comm import (
    RankTimeline,
    Span,
    breakdown,
    bus_factor,
    collective_calls,
    collective_kind,
    find_stragglers,
    host_call_costs,
    intersection,
    read_timeline,
    union,
)


@pytest.mark.parametrize("name, kind", [
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "all_reduce"),
    ("ncclKernel_AllGather_RING_LL_Sum_int8_t", "all_gather"),
    ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", "reduce_scatter"),
    ("gloo:all_reduce", "all_reduce"),
    ("c10d::_allgather_base_", "all_gather"),
    ("c10d::broadcast_", "broadcast"),
    ("c10d::barrier", "barrier"),
])
def test_collective_kind(name, kind):
    assert collective_kind(name) == kind


def test_classification():
    assert is_communication_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL")
    assert not is_communication_kernel("ampere_sgemm_128x64_nn")
    assert is_communication_op("c10d::allreduce_") and is_communication_op("gloo:all_reduce")
    assert is_communication_op("record_param_comms")
    assert not is_communication_op("aten::broadcast_tensors")


def test_bus_factor_follows_nccl_tests():
    assert bus_factor("all_reduce", 2) == 1.0
    assert bus_factor("all_reduce", 8) == pytest.approx(1.75)
    assert bus_factor("all_gather", 4) == pytest.approx(0.75)
    assert bus_factor("reduce_scatter", 2) == 0.5


def test_interval_algebra():
    assert union([(5, 7), (0, 2), (1, 3), (7, 8)]) == [(0, 3), (5, 8)]
    assert intersection([(0, 10), (20, 30)], [(5, 25)]) == [(5, 10), (20, 25)]


def _gpu_timeline():
    return RankTimeline(
        "synthetic",
        device=[Span("sgemm", 0, 10), Span("sgemm", 20, 30), Span("ncclDevKernel_AllReduce", 5, 25, communication=True)],
        steps=[Span("ProfilerStep#3", 0, 40)],
    )


def test_breakdown_splits_hidden_and_exposed_communication():
    b = breakdown(_gpu_timeline())
    assert b.steps == 1
    assert b.step_time_s == pytest.approx(40e-6)
    assert b.compute_time_s == pytest.approx(20e-6)
    assert b.communication_time_s == pytest.approx(20e-6)
    assert b.hidden_communication_share == pytest.approx(0.5)
    assert b.exposed_communication_s == pytest.approx(10e-6)
    assert b.idle_time_s == pytest.approx(10e-6)
    assert b.busy_time_s == pytest.approx(30e-6)


def test_cpu_breakdown_leaves_out_ops_enclosing_a_collective():
    timeline = RankTimeline("cpu", host=[
        Span("autograd::engine::evaluate_function", 0, 100, tid=1),
        Span("aten::mm", 0, 40, tid=1),
        Span("c10d::allreduce_", 40, 45, tid=1, communication=True),
        Span("gloo:all_reduce", 45, 90, tid=7, communication=True),
    ], steps=[Span("ProfilerStep#0", 0, 100, tid=1)])
    b = breakdown(timeline)
    assert b.compute_time_s == pytest.approx(40e-6)
    assert b.communication_time_s == pytest.approx(50e-6)
    assert b.exposed_communication_s == pytest.approx(50e-6)
    assert b.idle_time_s == pytest.approx(10e-6)


def _write_trace(path, events, **meta):
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events, **meta}).encode()))
    return path


def _nccl_trace(tmp_path, name, kernel_us):
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#5", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
        {"ph": "X", "cat": "kernel", "name": "sm90_gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 300,
         "args": {"device": 0, "stream": 7, "correlation": 1, "External id": 1}},
        {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "pid": 0, "tid": 13,
         "ts": 400, "dur": kernel_us,
         "args": {"device": 0, "stream": 13, "correlation": 2, "External id": 2, "Collective name": "allreduce",
                  "In msg nelems": 1 << 20, "Out msg nelems": 1 << 20, "Group size": 2, "dtype": "BFloat16"}},
    ]
    return _write_trace(tmp_path / name, events, distributedInfo={"backend": "nccl", "rank": 0, "world_size": 2})


def test_collective_sizes_and_bus_bandwidth_from_nccl_kernel_args(tmp_path):
    timeline = read_timeline(_nccl_trace(tmp_path, "t.json.gz", 100))
    assert timeline.metadata["distributedInfo"]["world_size"] == 2
    (call,) = collective_calls(timeline, world_size=2)
    assert call.kind == "all_reduce"
    assert call.bytes == 2 * (1 << 20)
    assert call.time_s == pytest.approx(100e-6)
    assert call.busbw_bytes_per_s == pytest.approx(2 * (1 << 20) / 100e-6 * 1.0)


def test_gloo_sizes_from_input_dims():
    timeline = RankTimeline("cpu", host=[Span("gloo:all_gather", 0, 10, tid=5, communication=True,
                                              input_dims=[[256]], input_types=["float"])],
                            steps=[Span("ProfilerStep#0", 0, 20)])
    (call,) = collective_calls(timeline, world_size=4)
    assert call.kind == "all_gather" and call.bytes == 256 * 4 * 4


def test_straggler_found_and_its_op_named():
    costs = {0: {"aten::mm at a.py:3": 0.010}, 1: {"aten::mm at a.py:3": 0.010, "sleep (host call at a.py:9)": 0.05},
             2: {"aten::mm at a.py:3": 0.011}}
    (s,) = find_stragglers({0: 0.010, 1: 0.060, 2: 0.011}, costs)
    assert s.rank == 1 and s.slowest_op == "sleep (host call at a.py:9)"
    assert s.excess_s == pytest.approx(0.0495)


def test_no_straggler_among_equal_ranks_or_a_single_rank():
    assert find_stragglers({0: 0.010, 1: 0.0105}, {}) == []
    assert find_stragglers({0: 0.010}, {}) == []


def test_two_ranks_compare_with_the_other_rank_not_their_mean():
    (s,) = find_stragglers({0: 0.010, 1: 0.013}, {})
    assert s.rank == 1 and s.median_busy_time_s == 0.010


def test_host_calls_outside_ops_are_costs():
    timeline = RankTimeline("cpu", host=[Span("aten::mm", 0, 100, tid=1)], steps=[Span("ProfilerStep#0", 0, 1000)],
                            builtin_calls=[Span("<built-in function sleep>", 200, 900, tid=1, call_from="t.py:9"),
                                           Span("<built-in method mm>", 0, 100, tid=1)])
    assert host_call_costs(timeline) == {"sleep (host call at t.py:9)": pytest.approx(700e-6)}
