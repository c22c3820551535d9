"""The public HTA corpus (../shared/fixtures/public-traces/hta, see its README) as a test: every Kineto trace gives
a report, with its device identified from the trace, no false TF32 / ends-early / input-idle findings, no
saving larger than the time it could remove, and no more GPU idle time than the wall time of the steps."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, SHARED
from roofline.analyze.trace_file import analyze_trace_file
from roofline.doctor import diagnose
from roofline.doctor.registry import profiled_time_s
from roofline.errors import RooflineError

CORPUS = SHARED / "fixtures" / "public-traces" / "hta"
FILES = sorted(str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*") if p.name.endswith((".json", ".json.gz"))) \
    if CORPUS.is_dir() else ["(corpus absent)"]
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"public trace corpus not present at {CORPUS} "
                                                               "(../shared is absent in this checkout)")

# file (prefix) -> (device kind, vendor, datasheet key or None); unlisted files only need a report
DEVICES = {
    "amd_trace/": ("gpu", "amd", "MI250 GCD"),
    "call_stack/": ("gpu", "nvidia", "A100 40GB"),
    "cpu_only/": ("cpu", "", None),
    "df_index_resolver/": ("gpu", "nvidia", "V100 SXM2 32GB"),
    "ns_resolution_trace/": ("gpu", "nvidia", "V100 SXM2 32GB"),
    "trace_diff/test/": ("gpu", "nvidia", "V100 SXM2 16GB"),
    "trace_diff/control/": ("gpu", "nvidia", "A100 40GB"),
    "negative_queue_length_values_check/": ("gpu", "nvidia", "A100 80GB"),
    "timeline_analysis/": ("gpu", "nvidia", "A100 40GB"),
    "trace_filter/": ("gpu", "nvidia", "A100 40GB"),
    "mtia_": ("accelerator", "meta", None),
    # GPU jobs recorded without ProfilerActivity.CUDA: NCCL collectives and record_stream, no kernel
    "rank_non_gpu/": ("gpu", "", None),
    "rank_unavailable/": ("gpu", "", None),
    "mixed_files/": ("gpu", "", None),
    "distributed_info_unavailable/": ("gpu", "nvidia", "A100 40GB"),
    "trace_file_list/": ("gpu", "nvidia", "V100 SXM2 16GB"),
}


UNRECORDED_GPU_JOBS = ("rank_non_gpu/", "rank_unavailable/", "mixed_files/", "distributed_info_unavailable/")


def _expected_device(name: str):
    return next((v for k, v in DEVICES.items() if name.startswith(k)), None)


@needs_corpus
@pytest.mark.slow
@pytest.mark.parametrize("name", FILES)
def test_public_trace_gives_an_honest_report(name):
    path = CORPUS / name
    if name.endswith("_et.json.gz"):
        with pytest.raises(RooflineError, match="not a Chrome/Kineto trace"):
            analyze_trace_file(path)
        return
    report = analyze_trace_file(path)
    report.findings = diagnose(report)
    device = report.extra["device"]
    expected = _expected_device(name)
    if expected:
        kind, vendor, sheet = expected
        assert (device["kind"], device["vendor"], device["datasheet"]) == (kind, vendor, sheet), device
    assert device["how"]
    assert report.ceilings.source != "measured", "a trace from elsewhere was judged against this machine"
    notes = " ".join(report.summary.notes)
    assert "ends early" not in notes and "PARTIAL" not in notes
    rules = {f.rule for f in report.findings}
    if device["vendor"] != "nvidia":
        assert "tf32-off" not in rules
    for f in report.findings:
        if f.rule == "tf32-off":
            assert not any("s1688" in k or "tf32" in k.lower() for k in f.evidence["kernels"]), f.evidence
        if f.rule == "launch-overhead":
            assert f.estimated_savings_s <= f.evidence["idle_s"] + f.evidence["busy_s"]
        assert f.estimated_savings_s <= profiled_time_s(report) * (1 + 1e-9), (f.rule, f.estimated_savings_s)
        if f.rule == "input-idle":
            assert f.evidence["idle_at_start_s"] <= f.evidence["step_span_s"], f.evidence
    idle, wall = report.summary.idle_time_s, report.summary.wall_time_s
    if idle is not None and wall is not None:
        assert idle <= wall * (1 + 1e-9), (idle, wall)  # overlapping step windows counted idle twice
    if name.startswith("critical_path/alexnet"):
        assert "input-idle" not in rules and "warm-up" in rules
    if name.startswith("mtia_"):
        assert report.ceilings.source == "none" and "--ceilings FILE" in notes
        assert sum(1 for n in report.summary.notes if n.startswith("warning:")) == 1
    if name.startswith("trace_file_list/"):
        assert "ops are absent" in notes
    if name.startswith("cpu_only/"):
        assert "gloo:all_reduce" in notes
    if name.startswith(UNRECORDED_GPU_JOBS):
        assert "the GPU's activity was not recorded" in notes and "ran on the CPU" not in notes
        assert not rules & {"model-on-cpu", "unfused-chain"}, rules
        assert not any(f.evidence.get("waits_for_device") is False for f in report.findings)


@needs_corpus
@pytest.mark.slow
def test_roofline_diff_says_the_devices_differ():
    from roofline.analyze.diff import diff_reports

    a = analyze_trace_file(CORPUS / "trace_diff" / "control" / "control.json.gz")
    b = analyze_trace_file(CORPUS / "trace_diff" / "test" / "test.json.gz")
    warnings = diff_reports(a, b).warnings
    assert any("different devices" in w and "A100" in w and "V100" in w for w in warnings)


@needs_corpus
@pytest.mark.slow
def test_largest_corpus_trace_stays_under_a_gigabyte(tmp_path):
    """Peak RSS of the whole `roofline trace` command on the corpus's heaviest file (VmHWM of a fresh process)."""
    hwm = tmp_path / "hwm"
    code = ("import atexit, runpy, sys\n"
            f"atexit.register(lambda: open({str(hwm)!r}, 'w').write([l.split()[1] for l in open('/proc/self/status')"
            " if l.startswith('VmHWM')][0]))\n"
            "sys.argv = ['roofline'] + sys.argv[1:]\n"
            "runpy.run_module('roofline', run_name='__main__')\n")
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    trace = CORPUS / "mtia_trace_single_rank" / "mtia_rank_0.json.gz"
    proc = subprocess.run([sys.executable, "-c", code, "trace", str(trace), "-o", str(tmp_path / "out"), "--no-html"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert int(hwm.read_text()) * 1024 <= 2**30


@needs_corpus
def test_a_kernel_launched_under_no_op_gets_an_op_of_its_own():
    """HTA's event-sync trace calls torch.cuda._sleep from Python: its spin kernel (71% of the step's kernel time)
    is launched under no op, and was unattributed (29.4% attributed). It now sits in a DIRECT_LAUNCH_OP op of its
    own, unmodelled with the reason; a trace with no op at all stays a kernel-level report."""
    from roofline.analyze.pipeline import DIRECT_LAUNCH_NOTE
    from roofline.capture.kineto import load_trace
    from roofline.capture.trace_model import DIRECT_LAUNCH_OP

    path = CORPUS / "critical_path" / "cuda_event_sync" / "event_sync_trace.json.gz"
    trace = load_trace(path)
    direct = [op for op in trace.ops if op.name == DIRECT_LAUNCH_OP]
    assert len(direct) == 1
    (launch,) = [l for l in trace.launches if l.op == direct[0].index]
    assert (launch.ts_us, launch.dur_us) == (direct[0].ts_us, direct[0].dur_us)
    assert [k.name for k in trace.kernels if k.correlation == launch.correlation] == [
        "at::cuda::(anonymous namespace)::spin_kernel(long)"]
    report = analyze_trace_file(path)
    assert report.summary.kernel_time_attributed_share == pytest.approx(1.0)
    (row,) = [op for op in report.ops if op.name == DIRECT_LAUNCH_OP]
    assert not row.modeled and row.kernels == ["at::cuda::(anonymous namespace)::spin_kernel(long)"]
    assert any(n.endswith(DIRECT_LAUNCH_NOTE) for n in report.summary.notes)
    kernel_level = load_trace(CORPUS / "trace_file_list" / "inference_rank_1.json.gz")
    assert not kernel_level.ops and kernel_level.launches
