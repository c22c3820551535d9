"""What analyze_trace_file says about a trace, word for word: the device line and its roofs, a kernel-only trace's
top kernels, a range-profiler trace, the job's collectives (outer calls only,
the four longest), and --ceilings FILE."""

from __future__ import annotations

import json

from roofline.analyze.trace_file import ASSUMED_LAUNCH_S, analyze_trace_file
from roofline.device.cache import save_ceilings
from roofline.report import Ceilings

H100 = [{"name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0}]
NO_CPU_ROOFS = ("warning: no roofs: a CPU trace recorded on a host the trace does not name is not judged against "
                "this machine's CPU; for roofs, write them with `roofline ceilings --json FILE` on that machine (or by "
                "hand: memory_bandwidth_bytes_per_s and peak_flops_per_s per dtype) and pass --ceilings FILE")


def x(cat, name, ts, dur, pid=1, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _analyze(tmp_path, events, **meta):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, **meta, "traceEvents": events}))
    return analyze_trace_file(path)


def test_kernel_only_trace_lists_its_five_longest_kernels(tmp_path):
    report = _analyze(tmp_path, [x("kernel", f"k{i}", 10.0 * i, 1.0 + i, pid=0, tid=7) for i in range(7)],
                      deviceProperties=H100)
    assert report.summary.notes[0] == ("Device: NVIDIA H100 80GB HBM3 (deviceProperties names it 'NVIDIA H100 80GB "
                                       "HBM3'); roofs: datasheet")
    assert report.summary.notes[-1] == ("ops are absent (no cpu_op events): a kernel-level report of 7 device events "
                                        "(28 us); by time: k6 7 us; k5 6 us; k4 5 us; k3 4 us; k2 3 us")
    assert report.environment.device_name == "NVIDIA H100 80GB HBM3" and report.environment.platform == ""
    assert report.extra["device"]["roofs"] == "datasheet" and report.extra["device"]["datasheet"] == "H100 SXM"
    c = report.ceilings
    assert c.source == "datasheet" and c.launch_overhead_s == ASSUMED_LAUNCH_S == 5e-6
    assert "; launch overhead assumed 5 us (not measured on this GPU)" in c.method
    assert not any(n.startswith("warning:") for n in report.summary.notes)


def test_collectives_outer_calls_only_four_longest_with_the_job(tmp_path):
    events = [x("user_annotation", "ProfilerStep#1", 0.0, 1000.0),
              x("cpu_op", "gloo:all_reduce", 10.0, 100.0), x("cpu_op", "c10d::allreduce_", 20.0, 50.0),
              x("cpu_op", "gloo:all_reduce", 200.0, 300.0), x("cpu_op", "c10d::broadcast_", 600.0, 10.0),
              x("cpu_op", "record_param_comms", 700.0, 5.0), x("cpu_op", "gloo:send", 710.0, 1.0),
              x("cpu_op", "mpi:recv", 720.0, 2.0)]
    notes = _analyze(tmp_path, events, distributedInfo={"backend": "gloo", "rank": 1, "world_size": 4}).summary.notes
    assert notes[:2] == ["Device: CPU (model not recorded in the trace) (no device events and no device named in the "
                         "trace); roofs: none", NO_CPU_ROOFS]
    assert notes[-1] == ("collectives (backend gloo, rank 1 of 4): gloo:all_reduce x2 (400 us host time), "
                         "c10d::broadcast_ x1 (10 us host time), record_param_comms x1 (5 us host time), "
                         "mpi:recv x1 (2 us host time)")
    ranked = _analyze(tmp_path, events, distributedInfo={"backend": "nccl", "rank": 2}).summary.notes[-1]
    assert ranked.startswith("collectives (backend nccl): gloo:all_reduce x2")  # no world size: no "rank r of n"
    bare = _analyze(tmp_path, events, distributedInfo={"backend": "nccl"}).summary.notes[-1]
    assert bare.startswith("collectives (backend nccl): gloo:all_reduce x2")
    assert _analyze(tmp_path, events, distributedInfo={"rank": 0}).summary.notes[-1].startswith(
        "collectives: gloo:all_reduce x2")
    plain = _analyze(tmp_path, events[:1] + [x("cpu_op", "aten::add", 5.0, 1.0)]).summary.notes
    assert not any(n.startswith("collectives") for n in plain)


def test_collectives_host_time_is_written_as_every_view_writes_a_time(tmp_path):
    for dur_us, said in ((0.5, "500 ns"), (2500.0, "2.5 ms"), (1.5e6, "1.5 s")):
        events = [x("user_annotation", "ProfilerStep#1", 0.0, 2e6), x("cpu_op", "gloo:all_reduce", 10.0, dur_us)]
        assert _analyze(tmp_path, events).summary.notes[-1] == f"collectives: gloo:all_reduce x1 ({said} host time)"


def test_range_profiler_and_empty_step_notes(tmp_path):
    events = [x("cpu_op", "aten::add", 0.0, 5.0), x("cuda_runtime", "cudaLaunchKernel", 1.0, 1.0, correlation=3),
              x("cuda_profiler_range", "r", 0, 5)]
    notes = _analyze(tmp_path, events, deviceProperties=H100).summary.notes
    assert notes[1] == ("warning: no roofs: the trace names NVIDIA H100 80GB HBM3 but holds no device activity "
                        "(kernels were not recorded), so op times are host times and are not judged against a "
                        "device's roofs; record with ProfilerActivity.CUDA for device times, or pass --ceilings FILE "
                        "to judge them anyway")
    assert notes[-1] == ("the trace holds CUPTI range-profiler events but no kernel activity: device times, idle time "
                         "and kernel attribution are unavailable")
    # A trace with no op inside its steps is refused: tests/cli/test_traces_with_nothing_to_place.py


def test_ceilings_file_is_named_as_the_roofs(tmp_path):
    ceilings = Ceilings(device="cuda", device_name="lab box", memory_bandwidth_bytes_per_s=1e12,
                        peak_flops_per_s={"float32": 1e13}, launch_overhead_s=4e-6, source="measured")
    path = tmp_path / "c.json"
    save_ceilings(ceilings, path)
    report = _analyze(tmp_path, [x("kernel", "k", 0.0, 1.0, pid=0, tid=7)], deviceProperties=H100)
    assert report.extra["device"]["roofs"] == "datasheet"
    trace = tmp_path / "t.json"
    report = analyze_trace_file(trace, str(path))
    assert report.summary.notes[0].endswith(f"; roofs: --ceilings {path}")
    assert report.ceilings.device_name == "lab box" and report.extra["device"]["roofs"] == f"--ceilings {path}"
    assert report.environment.hostname == ""


def test_an_accelerator_trace_is_not_judged_against_a_cpu_and_its_identity_is_read_when_not_given(tmp_path):
    from types import SimpleNamespace

    from roofline.analyze.trace_file import ceilings_for_trace
    from roofline.device.identify import DeviceIdentity

    accel = ceilings_for_trace(SimpleNamespace(kernels=[]),
                               identity=DeviceIdentity(kind="accelerator", vendor="acme", name="Acme X1"))
    assert (accel.device, accel.device_name, accel.source) == ("acme", "Acme X1", "none")
    assert accel.method.startswith("no roofs known for Acme X1: its memory bandwidth")
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "deviceProperties": H100, "traceEvents": [
        x("cpu_op", "aten::add", 0.0, 1.0), x("kernel", "k", 2.0, 1.0, pid=0, tid=7)]}))
    from roofline.capture.kineto import load_trace

    h100 = ceilings_for_trace(load_trace(path))
    assert h100.device == "cuda" and h100.device_name == "NVIDIA H100 80GB HBM3" and h100.source.startswith("datasheet")
