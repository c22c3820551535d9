"""A step that ran on the CPU of a GPU machine (model never moved with .to('cuda')): judged against the CPU's roofs,
the device named the CPU, the GPU kept for the doctor's estimate (analyze/unused_gpu.py).

The trace is a real CPU torch.profiler trace with the H200's deviceProperties entry as Kineto writes it on a GPU
machine that ran no kernel (tests/data/cpu_on_gpu/make.py)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from roofline.analyze.profiled import report_from_profile
from roofline.analyze.trace_file import analyze_trace_file
from roofline.capture.kineto import load_trace
from roofline.capture.profiling import ProfileRecord
from roofline.analyze.unused_gpu import ran_on_host_only
from roofline.report import Ceilings

DATA = Path(__file__).resolve().parents[1] / "data"
CPU_ON_H200 = DATA / "cpu_on_gpu" / "train_cpu_h200props.json.gz"
H200_TRACE = DATA / "h200" / "bad_syncs_fwd_fp32.json.gz"
H200 = Ceilings(device="cuda", device_name="NVIDIA H200", memory_bandwidth_bytes_per_s=4.8e12,
                peak_flops_per_s={"float32": 67e12}, launch_overhead_s=5e-6, source="measured")
CPU = Ceilings(device="cpu", device_name="Test CPU 9000", memory_bandwidth_bytes_per_s=2e10,
               peak_flops_per_s={"float32": 1e11}, launch_overhead_s=1e-6, source="measured")


def _record(trace: Path, device: str = "cuda") -> ProfileRecord:
    return ProfileRecord(trace_path=trace, device=device, workload="train.py", ceilings=H200, schedule={"active": 2},
                         steps_seen=2, whole_block=False, block_s=0.0, true_step_s=[1e-3, 1e-3],
                         profiled_step_s=[2e-3, 2e-3], timed_after_profiler=False, reference_peak_bytes=33 << 20,
                         syncs=None, sync_steps=0, syncs_in_warmup=False, syncs_simulated=False, error=None)


def _edited(tmp_path: Path, extra_events: list[dict]) -> Path:
    """The CPU-on-H200 trace with events added (what a GPU model's trace would also hold)."""
    trace = json.loads(gzip.decompress(CPU_ON_H200.read_bytes()))
    trace["traceEvents"] += extra_events
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    return path


def test_a_profiled_step_without_gpu_kernels_on_a_cuda_run_is_judged_against_the_cpu():
    report = report_from_profile(_record(CPU_ON_H200), cpu_ceilings=lambda: CPU)
    assert report.ceilings is CPU and report.environment.device_name == "Test CPU 9000"
    assert max(op.attainable_flops_per_s for op in report.ops) == 1e11  # the CPU's roof, not the H200's 67e12
    assert not any(n.startswith("no GPU kernels") for n in report.summary.notes)  # the first note says it all
    assert report.memory.reference_peak_bytes is None  # the GPU allocator's peak is not this step's memory
    unused = report.extra["unused_gpu"]
    assert unused["name"] == "NVIDIA H200" and unused["roofs"]["peak_flops_per_s"] == {"float32": 67e12}
    assert report.summary.notes[0] == ("the ops ran on the CPU (Test CPU 9000) though NVIDIA H200 is present (the "
                                       "run's device was cuda, and the profiled steps launched no GPU kernel): their "
                                       "times are the CPU's, judged against the CPU's roofs; unless the CPU is "
                                       "deliberate, move the model and its inputs with .to('cuda') (doctor rule "
                                       "model-on-cpu)")


def test_the_roofs_asked_for_are_kept_and_a_cpu_run_or_a_gpu_step_is_left_alone():
    kept = report_from_profile(_record(CPU_ON_H200), cpu_ceilings=None)  # --ceilings FILE
    assert kept.ceilings is H200 and "unused_gpu" in kept.extra
    assert "judged against the roofs given (NVIDIA H200), as asked" in kept.summary.notes[0]
    given = report_from_profile(_record(CPU_ON_H200), H200, cpu_ceilings=lambda: CPU)
    assert given.ceilings is H200
    on_cpu = report_from_profile(_record(CPU_ON_H200, device="cpu"), cpu_ceilings=lambda: pytest.fail("asked"))
    assert on_cpu.ceilings is H200 and "unused_gpu" not in on_cpu.extra
    on_gpu = report_from_profile(_record(H200_TRACE), cpu_ceilings=lambda: pytest.fail("asked"))
    assert on_gpu.ceilings is H200 and "unused_gpu" not in on_gpu.extra


def test_a_cpu_trace_naming_a_gpu_recorded_here_gets_this_hosts_cpu_roofs(monkeypatch):
    from roofline.device import host
    from roofline.device.cache import cached_ceilings

    monkeypatch.setattr(host, "host_name", lambda: "vm")  # the fixture's host_name
    report = analyze_trace_file(CPU_ON_H200)
    here = cached_ceilings(host.cpu_name(), allow_quick=True)  # conftest caches this machine's quick CPU roofs
    assert report.ceilings.device == "cpu" and report.ceilings.device_name == here.device_name
    assert report.ceilings.memory_bandwidth_bytes_per_s == here.memory_bandwidth_bytes_per_s
    # the trace records no CPU model: this machine's is named only as whose roofs were used, never as the device's
    assert report.extra["device"]["kind"] == "cpu"
    assert report.environment.device_name == "CPU (model not recorded in the trace)"
    assert report.summary.notes[0] == ("Device: CPU (model not recorded in the trace) (no device activity in the "
                                       "trace, though it names NVIDIA H200: its ops ran on the CPU); roofs: this "
                                       f"machine's measured CPU ceilings ({here.device_name}, {here.source}), because "
                                       "the trace's host name 'vm' is this machine's; the trace does not record which "
                                       "CPU ran it")
    assert report.summary.notes[1].startswith("the ops ran on the CPU though NVIDIA H200 is present")
    roofs = report.extra["unused_gpu"]["roofs"]
    assert roofs["source"] == "datasheet" and roofs["memory_bandwidth_bytes_per_s"] == pytest.approx(4.8e12)


def test_a_cpu_trace_naming_a_gpu_from_another_host_gets_no_roofs(monkeypatch):
    from roofline.device import host

    monkeypatch.setattr(host, "host_name", lambda: "elsewhere")
    report = analyze_trace_file(CPU_ON_H200)
    assert not report.ceilings.has_roofs() and report.ceilings.device == "cpu"
    assert report.summary.notes[1].startswith("warning: no roofs: a CPU trace recorded on vm is not judged against "
                                              "this machine's CPU")
    assert "not judged against any roof (no CPU roofs are known)" in report.summary.notes[2]
    assert report.extra["unused_gpu"]["name"] == "NVIDIA H200"


LAUNCH = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1.0, "dur": 1.0,
          "args": {"correlation": 9}}
CUDA_ALLOCATION = {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 1.0, "s": "t",
                   "args": {"Addr": 1, "Bytes": 512, "Total Allocated": 512, "Total Reserved": 2 << 20,
                            "Device Type": 1, "Device Id": 0}}


@pytest.mark.parametrize("event", [LAUNCH, CUDA_ALLOCATION])
def test_a_gpu_model_whose_kernels_were_not_recorded_is_not_taken_for_a_cpu_one(tmp_path, event):
    """A launch call or a CUDA allocation: the ops drove the GPU, only its activity went unrecorded."""
    path = _edited(tmp_path, [event])
    assert not ran_on_host_only(load_trace(path))
    report = analyze_trace_file(path)
    assert "unused_gpu" not in report.extra and report.extra["device"]["kind"] == "gpu"
    assert report.summary.notes[1].startswith("warning: no roofs: the trace names NVIDIA H200 but holds no device "
                                              "activity (kernels were not recorded)")


def test_the_harness_own_device_synchronize_does_not_count_as_gpu_work(tmp_path):
    sync = {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 1, "ts": 1.0,
            "dur": 3.0, "args": {"correlation": 4}}
    assert ran_on_host_only(load_trace(_edited(tmp_path, [sync])))
    assert not ran_on_host_only(load_trace(H200_TRACE))  # kernels: a GPU (or mixed) step is never this case


def test_in_a_profiled_cuda_run_only_kernels_and_launches_count(tmp_path):
    """The harness recorded CUDA activity: a CUDA allocation without a kernel (a buffer the process made outside
    the model) does not hide the CPU step; a launch call does."""
    report = report_from_profile(_record(_edited(tmp_path, [CUDA_ALLOCATION])), cpu_ceilings=lambda: CPU)
    assert report.ceilings is CPU and "unused_gpu" in report.extra
    launched = report_from_profile(_record(_edited(tmp_path, [LAUNCH])), cpu_ceilings=lambda: pytest.fail("asked"))
    assert launched.ceilings is H200 and "unused_gpu" not in launched.extra


NCCL_OP = {"ph": "X", "cat": "cpu_op", "name": "nccl:all_reduce", "pid": 1, "tid": 1, "ts": 2.0, "dur": 3.0,
           "args": {"External id": 99999}}


def _without_device_properties(path: Path) -> Path:
    trace = json.loads(path.read_text())
    trace.pop("deviceProperties")
    path.write_text(json.dumps(trace))
    return path


def test_a_gpu_job_with_its_kernels_unrecorded_is_said_so_and_never_judged_as_a_cpu_run(tmp_path):
    """HTA's distributed_info_not_found / rank_not_found / rank_non_gpu: a GPU job's host ops only (an addmm of
    20 GFLOP in 46 us), an NCCL collective among them, with or without deviceProperties. Neither "ran on the CPU"
    nor any finding built on the host's launch times; a note says the device's activity was not recorded. The
    same trace without the NCCL op is still a CPU run: the test fails if everything became a GPU."""
    from roofline.doctor import diagnose

    for strip in (False, True):
        path = _edited(tmp_path, [NCCL_OP])
        if strip:
            _without_device_properties(path)
        assert not ran_on_host_only(load_trace(path))
        report = analyze_trace_file(path)
        device = report.extra["device"]
        assert "unused_gpu" not in report.extra and device["kind"] == "gpu"
        assert device["name"] == ("GPU (model not named)" if strip else "NVIDIA H200")
        assert not report.ceilings.has_roofs()
        notes = " ".join(report.summary.notes)
        assert "the GPU's activity was not recorded" in notes and "ProfilerActivity.CUDA" in notes
        assert "a CPU-only profile" not in notes and "ran on the CPU" not in notes
        rules = {f.rule for f in diagnose(report)}
        assert not rules & {"model-on-cpu", "unfused-chain"}, rules
    cpu = analyze_trace_file(_without_device_properties(_edited(tmp_path, [])))
    assert cpu.extra["device"]["kind"] == "cpu" and "device_not_recorded" not in cpu.extra
    on_cpu_rules = {f.rule for f in diagnose(analyze_trace_file(_edited(tmp_path, [])))}
    assert "model-on-cpu" in on_cpu_rules
