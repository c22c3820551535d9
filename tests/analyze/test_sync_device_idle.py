"""A host sync's saving is the time it left the device idle, never the whole wait: while the host waits in .item()
or a copy to the host, the device runs the queue it was given, and a sync-free loop would still have to run that
work. HTA's negative_queue_length_values_check trace once claimed 760 ms of sync savings while its device was idle
0.69 s in all (its copies to the host waited 139 ms each, the device busy for 56 ms of that)."""

from __future__ import annotations

import json

import pytest

from conftest import SHARED
from roofline import intervals
from roofline.analyze.pipeline import report_from_trace
from roofline.analyze.trace_file import analyze_trace_file
from roofline.capture.kineto import load_trace
from roofline.doctor import diagnose
from roofline.report import Ceilings

NEGATIVE_QUEUE = SHARED / "fixtures" / "public-traces" / "hta" / "negative_queue_length_values_check" / "rank0.json.gz"
GPU = Ceilings(device="cuda", device_name="test gpu", memory_bandwidth_bytes_per_s=1e12,
               peak_flops_per_s={"float32": 1e13}, launch_overhead_s=5e-6)


def _x(cat, name, ts, dur, pid=1, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _events(cuda_sync: bool) -> list[dict]:
    """A 500 us gemm, then an .item() whose host call blocks 800 us (30..830) while the gemm and the copy to the
    host run until 525: the device is idle 305 us of the call; the sync event itself spans 34..828 (303 us idle)."""
    events = [
        _x("user_annotation", "ProfilerStep#0", 0, 1000),
        _x("cpu_op", "aten::mm", 10, 10, **{"External id": 1}),
        _x("cuda_runtime", "cudaLaunchKernel", 12, 2, correlation=11, **{"External id": 1}),
        _x("kernel", "gemm", 20, 500, pid=0, tid=7, correlation=11, device=0, stream=7),
        _x("cpu_op", "aten::_local_scalar_dense", 30, 800, **{"External id": 2}),
        _x("cuda_runtime", "cudaMemcpyAsync", 32, 2, correlation=12, **{"External id": 2}),
        _x("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 520, 5, pid=0, tid=7, correlation=12, device=0,
           stream=7),
        _x("cpu_op", "aten::add", 840, 10, **{"External id": 3}),
        _x("cuda_runtime", "cudaLaunchKernel", 842, 2, correlation=14, **{"External id": 3}),
        _x("kernel", "add_kernel", 850, 50, pid=0, tid=7, correlation=14, device=0, stream=7),
    ]
    if cuda_sync:
        events += [
            _x("cuda_runtime", "cudaStreamSynchronize", 34, 794, correlation=13, **{"External id": 2}),
            _x("cuda_sync", "Stream Sync", 34, 794, pid=0, tid=7, correlation=13, device=0, stream=7,
               cuda_sync_kind="Stream Sync", **{"External id": 2}),
        ]
    return events


def _report(tmp_path, cuda_sync: bool):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": _events(cuda_sync)}))
    return report_from_trace(load_trace(path), GPU)


def _sync_findings(report):
    return [f for f in diagnose(report) if f.rule == "host-device-sync"]


def test_an_ops_device_idle_time_is_the_part_of_its_host_call_no_device_work_covers(tmp_path):
    report = _report(tmp_path, cuda_sync=False)
    item = next(op for op in report.ops if op.name == "aten::_local_scalar_dense")
    assert item.cpu_time_s == pytest.approx(800e-6)
    assert item.device_idle_s == pytest.approx(305e-6)
    (f,) = _sync_findings(report)
    assert f.estimated_savings_s == pytest.approx(305e-6)
    assert f.evidence["host_blocked_s"] == pytest.approx(800e-6)
    assert "idle" in f.savings_method and "305 us of their 800 us" in f.savings_method


def test_a_trace_sync_sites_saving_is_the_device_idle_time_inside_its_sync_events(tmp_path):
    report = _report(tmp_path, cuda_sync=True)
    (site,) = report.syncs
    assert site.stall_s == pytest.approx(794e-6) and site.device_idle_s == pytest.approx(303e-6)
    (f,) = _sync_findings(report)
    assert f.estimated_savings_s == pytest.approx(303e-6)
    assert "303 us of the 794 us the host waited" in f.savings_method


def test_coverage_leaves_uncovered_only_the_gaps_inside_each_window():
    busy = intervals.Coverage([(0, 2), (3, 5), (4, 8), (10, 11)])
    assert busy.uncovered(0, 12) == pytest.approx(4)
    assert busy.uncovered(1, 3.5) == pytest.approx(1)
    assert list(busy.uncovered([-5, 9, 4], [0, 10.5, 4])) == pytest.approx([5, 1, 0])
    assert intervals.Coverage([]).uncovered(1, 3) == pytest.approx(2)
    big = 1.7e15  # a Kineto timestamp in us: the fractions survive
    assert intervals.Coverage([(big, big + 0.5)]).uncovered(big - 0.25, big + 1.0) == pytest.approx(0.75)


def test_negative_queue_traces_sync_savings_fit_in_the_devices_idle_time():
    if not NEGATIVE_QUEUE.exists():
        pytest.skip(f"fixture {NEGATIVE_QUEUE} not present")
    report = analyze_trace_file(NEGATIVE_QUEUE)
    trace = load_trace(NEGATIVE_QUEUE)
    steps = (trace.steps[0].ts_us, trace.steps[-1].ts_us + trace.steps[-1].dur_us)
    busy = intervals.union([(k.ts_us, k.ts_us + k.dur_us) for k in trace.kernels])
    idle_s = (steps[1] - steps[0] - intervals.length(intervals.clip(busy, *steps))) / 1e6
    findings = diagnose(report)
    syncs = [f for f in findings if f.rule == "host-device-sync"]
    assert syncs and sum(f.estimated_savings_s for f in syncs) <= idle_s
    assert all(f.estimated_savings_s <= f.evidence["host_blocked_s"] for f in syncs)
    assert max(f.evidence["host_blocked_s"] for f in syncs) > idle_s  # the wait itself is longer: the old claim
    assert sum(f.estimated_savings_s for f in findings) <= report.summary.wall_time_s


def test_a_sync_event_without_a_device_argument_is_its_own_devices(tmp_path):
    """A cuda_sync event that names its device only by its pid (the "device" argument absent) is still asked of that
    device's work: another GPU busy through the whole wait does not hide device 0's idle time."""
    events = _events(cuda_sync=True)
    sync = next(e for e in events if e["cat"] == "cuda_sync")
    del sync["args"]["device"]
    events += [_x("cuda_runtime", "cudaLaunchKernel", 14, 2, tid=2, correlation=21, **{"External id": 9}),
               _x("kernel", "other_gemm", 25, 900, pid=1, tid=8, correlation=21, device=1, stream=8)]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    (site,) = report_from_trace(load_trace(path), GPU).syncs
    assert site.stall_s == pytest.approx(794e-6) and site.device_idle_s == pytest.approx(303e-6)
