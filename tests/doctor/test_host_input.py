import pytest

from conftest import SHARED
from doctor_cases import ceilings, op, report
from roofline.analyze.trace_file import analyze_trace_file
from roofline.doctor import diagnose
from roofline.report import KernelRecord, Timing


def _step(with_copies: bool, steps: int = 2):
    kernels = []
    ops = []
    t = 0.0
    for s in range(steps):
        if with_copies:
            ops.append(op("aten::copy_", [([256], "float32"), ([256], "float32")], step=s, source="train.py:12",
                          kernels=["Memcpy HtoD (Pageable -> Device)"]))
            kernels.append(KernelRecord("Memcpy HtoD (Pageable -> Device)", t, 5e-6, category="gpu_memcpy",
                                        op_index=len(ops) - 1))
            t += 6e-6
        ops.append(op("aten::mm", [([256, 256], "float32"), ([256, 256], "float32")], step=s, kernels=["gemm"]))
        kernels.append(KernelRecord("gemm", t, 50e-6, op_index=len(ops) - 1))
        t += 60e-6
    return report(ops, ceil=ceilings(device="cuda"), kernels=kernels, steps=steps)


def test_host_to_device_copies_each_step_are_found():
    findings = diagnose(_step(with_copies=True), rules=["host-to-device-copy"])
    assert len(findings) == 1
    f = findings[0]
    assert f.evidence["per_step"] == 1 and f.evidence["pageable"] == 2
    assert f.estimated_savings_s == pytest.approx(10e-6)
    assert f.locations and f.locations[0].startswith("train.py:12")
    assert "pin_memory" in f.fix


def test_no_copies_is_silent():
    assert diagnose(_step(with_copies=False), rules=["host-to-device-copy"]) == []


def _idle_report(first_launch_at: float):
    ops = []
    for s in range(2):
        ops.append(op("aten::randn", [([1], "int64")], step=s, start=0.0, cpu_time=first_launch_at,
                      source="train.py:5"))
        ops.append(op("aten::mm", [([64, 64], "float32"), ([64, 64], "float32")], step=s, kernels=["gemm"],
                      start=first_launch_at, cpu_time=1e-5, source="train.py:6"))
    r = report(ops, ceil=ceilings(device="cuda"), kernels=[KernelRecord("gemm", 0.0, 1e-3)], steps=2)
    r.profiled_step_time = Timing(median_s=2e-3, n=2)
    return r


def test_gpu_idle_while_the_host_prepares_input_is_found():
    findings = diagnose(_idle_report(first_launch_at=1e-3), rules=["input-idle"])
    assert len(findings) == 1
    assert findings[0].evidence["idle_at_start_s"] == pytest.approx(1e-3)
    assert findings[0].estimated_savings_s == pytest.approx(2e-3)


def test_prompt_launch_is_silent():
    assert diagnose(_idle_report(first_launch_at=2e-5), rules=["input-idle"]) == []


def test_a_blocking_copy_to_the_device_is_claimed_once():
    """A pageable .to('cuda') is a host-to-device copy and a "copy to device" sync site at once (bad_syncs_fwd_fp32:
    441 us of copies, 497 us of stall, once claimed by both rules). The copy rule owns it, saving the larger of the
    two; host-device-sync leaves that site out and keeps its others."""
    from roofline.report import SyncSite

    r = _step(with_copies=True)
    r.syncs = [SyncSite(kind="copy to device", location="train.py:12", count=2, stall_s=30e-6, per_step=1.0),
               SyncSite(kind="item", location="train.py:20", count=4, stall_s=8e-6, per_step=2.0)]
    findings = diagnose(r, rules=["host-to-device-copy", "host-device-sync"])
    by_rule = {}
    for f in findings:
        by_rule.setdefault(f.rule, []).append(f)
    (copy,) = by_rule["host-to-device-copy"]
    assert copy.estimated_savings_s == pytest.approx(30e-6)  # the stall, larger than the copies' 10 us
    assert copy.evidence["time_s"] == pytest.approx(10e-6) and copy.evidence["blocking_copies"] == 2
    assert [f.evidence["sync_kinds"] for f in by_rule["host-device-sync"]] == [["item"]]
    claimed = sum(f.estimated_savings_s for f in findings)
    assert claimed == pytest.approx(30e-6 + 8e-6)
    without_copies = _step(with_copies=False)
    without_copies.syncs = list(r.syncs)  # no copy finding to own the site: the sync rule keeps it
    kinds = [f.evidence["sync_kinds"] for f in diagnose(without_copies, rules=["host-device-sync"])]
    assert ["copy to device"] in kinds


HTOD = "Memcpy HtoD (Pageable -> Device)"
ALEXNET = (SHARED / "fixtures" / "public-traces" / "hta" / "critical_path" / "alexnet"
           / "benchmark_result_2869224_1695835535_trace.json.gz")


def _upload_then_forwards(weights: list[list[int]], inputs: list[list[int]]):
    """A trace without steps: the weights copied to the device one by one before the first kernel (module.to()),
    then per forward an input copy of each shape in ``inputs`` and a gemm."""
    ops, kernels, t = [], [], 0.0

    def copy(shape):
        nonlocal t
        ops.append(op("aten::copy_", [(shape, "float32"), (shape, "float32")], source="run.py:5", kernels=[HTOD]))
        kernels.append(KernelRecord(HTOD, t, 100e-6, category="gpu_memcpy", op_index=len(ops) - 1))
        t += 110e-6

    for shape in weights:
        copy(shape)
    for shape in [None, *inputs]:
        if shape is not None:
            copy(shape)
        ops.append(op("aten::mm", [([256, 256], "float32"), ([256, 256], "float32")], kernels=["gemm"]))
        kernels.append(KernelRecord("gemm", t, 50e-6, op_index=len(ops) - 1))
        t += 60e-6
    return report(ops, ceil=ceilings(device="cuda"), kernels=kernels)


def test_a_weight_upload_before_the_first_kernel_of_a_trace_without_steps_is_one_time_set_up():
    (f,) = diagnose(_upload_then_forwards([[64, 3, 11, 11], [64], [192, 64, 5, 5]], []),
                    rules=["host-to-device-copy"])
    assert f.severity == "info" and f.estimated_savings_s == 0
    assert f.evidence["one_time"] and f.evidence["copies"] == 3
    assert f.evidence["time_s"] == pytest.approx(300e-6)
    assert "ran once" in f.title and "per step" not in f.title and "none per step" in f.savings_method


def test_an_input_copied_again_after_the_first_kernel_stays_a_per_step_copy():
    """The first batch's copy precedes the first kernel too; the next batch's copy of its shape makes it input."""
    findings = diagnose(_upload_then_forwards([[64, 3, 11, 11], [64]], [[8, 3, 224, 224], [8, 3, 224, 224]]),
                        rules=["host-to-device-copy"])
    per_step, once = sorted(findings, key=lambda f: bool(f.evidence.get("one_time")))
    assert not per_step.evidence.get("one_time") and per_step.evidence["copies"] == 2
    assert per_step.estimated_savings_s == pytest.approx(200e-6)
    assert once.evidence["one_time"] and once.evidence["copies"] == 2 and once.estimated_savings_s == 0


def test_copies_in_a_trace_with_steps_are_the_steps_own():
    r = _step(with_copies=True)
    r.kernels.insert(0, KernelRecord(HTOD, -1e-3, 100e-6, category="gpu_memcpy", op_index=0))
    (f,) = diagnose(r, rules=["host-to-device-copy"])
    assert not f.evidence.get("one_time") and f.evidence["copies"] == 3


def test_alexnets_weight_upload_is_one_time_set_up_not_a_critical_per_step_copy():
    if not ALEXNET.exists():
        pytest.skip(f"fixture {ALEXNET} not present")
    from roofline.analyze.trace_file import analyze_trace_file

    report = analyze_trace_file(ALEXNET)
    (f,) = [f for f in diagnose(report) if f.rule == "host-to-device-copy"]
    assert f.evidence["one_time"] and f.evidence["copies"] == 16
    assert f.severity == "info" and f.estimated_savings_s == 0
    assert f.evidence["time_s"] == pytest.approx(sum(k.dur_s for k in report.kernels if "HtoD" in k.name))


def test_idle_share_is_of_the_step_not_of_its_ops_host_span():
    """HTA's backward_thread trace: one 413 ms step whose only op with a kernel starts 331 ms in and is the last op
    on the host. Against the ops' host span (331.19 ms) the GPU read as idle for the first 100% of the step; against
    the step's window it is 80%."""
    path = SHARED / "fixtures" / "public-traces" / "hta" / "call_stack" / "backward_thread.json"
    if not path.exists():
        pytest.skip(f"public trace corpus not present at {path.parent} (../shared is absent in this checkout)")
    report = analyze_trace_file(path)
    (finding,) = diagnose(report, rules=["input-idle"])
    lead, span = finding.evidence["idle_at_start_s"], finding.evidence["step_span_s"]
    assert span == pytest.approx(report.summary.wall_time_s) and report.extra["step_windows_s"] == [span]
    assert lead / span == pytest.approx(0.80, abs=0.005) and "first 80% of each step" in finding.title
    assert report.summary.idle_time_s <= report.summary.wall_time_s


def _queued_work_trace(tmp_path, queued: bool):
    """Two ProfilerSteps of 10 ms: the host prepares for 6 ms, then launches a 1 ms GEMM. With ``queued``, the GPU
    is busy from each step's start with work the trace holds no launch for (a copy and a kernel queued earlier,
    as in HTA's trace_compare fixture), so it is not idle waiting for input."""
    from kineto_events import write_trace, x

    events = []
    for s in range(2):
        t0 = 1000 + s * 10_000
        events.append(x("user_annotation", f"ProfilerStep#{10 + s}", t0, 10_000))
        events.append(x("cpu_op", "aten::randn", t0 + 10, 5_900, **{"External id": 10 * s + 1}))
        events.append(x("cpu_op", "aten::mm", t0 + 6_000, 50, **{"External id": 10 * s + 2,
                                                                 "Input Dims": [[64, 64], [64, 64]],
                                                                 "Input type": ["float", "float"]}))
        events.append(x("cuda_runtime", "cudaLaunchKernel", t0 + 6_010, 20, correlation=100 + s,
                        **{"External id": 10 * s + 2}))
        events.append(x("kernel", "gemm_kernel", t0 + 6_040, 1_000, pid=0, tid=7, device=0, stream=7,
                        correlation=100 + s, **{"External id": 10 * s + 2}))
        if queued:
            events.append(x("gpu_memcpy", "Memcpy DtoD (Device -> Device)", t0 + 20, 3_000, pid=0, tid=7,
                            device=0, stream=7, correlation=900 + s))
            events.append(x("kernel", "queued_kernel", t0 + 3_100, 2_500, pid=0, tid=7, device=0, stream=7,
                            correlation=950 + s))
    return write_trace(tmp_path, events, deviceProperties=[{"id": 0, "name": "NVIDIA H100 80GB HBM3"}])


def test_a_gpu_busy_at_the_steps_start_with_work_no_op_claims_is_not_idle_for_input(tmp_path):
    idle = analyze_trace_file(_queued_work_trace(tmp_path, queued=False))
    (finding,) = diagnose(idle, rules=["input-idle"])
    assert finding.evidence["idle_at_start_s"] == pytest.approx(6e-3, rel=0.01)
    busy = analyze_trace_file(_queued_work_trace(tmp_path, queued=True))
    assert busy.extra["step_first_device_work_s"] == [{"0": pytest.approx(20e-6)}] * 2
    assert diagnose(busy, rules=["input-idle"]) == []
