"""A CPU run whose profiled ops add up to many times its true step says so (analyze/inflated_profile.py): sweep 7's
DLRM on a busy 2-core machine showed 41 ms of ops against a 661 us step without a word."""

from __future__ import annotations

from pathlib import Path

from roofline.analyze.inflated_profile import INFLATED_NOTE, note_inflated_profile
from roofline.analyze.profiled import report_from_profile
from roofline.capture.profiling import ProfileRecord
from roofline.report import Ceilings, Report, Timing

TRACE = Path(__file__).resolve().parents[1] / "data" / "devtraces" / "torch2.1.2_cpu_mlp_train_rank0.pt.trace.json.gz"
CPU = Ceilings(device="cpu", device_name="cpu", memory_bandwidth_bytes_per_s=3e10,
               peak_flops_per_s={"float32": 3e11}, launch_overhead_s=2e-6, source="measured")


def _record(true_step_s: float, device: str = "cpu") -> ProfileRecord:
    return ProfileRecord(trace_path=TRACE, device=device, workload="w", ceilings=CPU, schedule={"active": 3},
                         steps_seen=3, whole_block=False, block_s=0.0, true_step_s=[true_step_s] * 3,
                         profiled_step_s=[true_step_s] * 3, timed_after_profiler=False, reference_peak_bytes=None,
                         syncs=None, sync_steps=0, syncs_in_warmup=False, syncs_simulated=False, error=None)


def _inflated(report: Report) -> list[str]:
    return [n for n in report.summary.notes if n.startswith(INFLATED_NOTE)]


def test_a_profile_whose_ops_far_outweigh_the_true_step_is_noted():
    honest = report_from_profile(_record(1.0))  # a step of 1 s: the ops' sum is far less
    per_step = honest.summary.total_time_s / honest.steps
    assert per_step > 0 and not _inflated(honest)
    slow = report_from_profile(_record(per_step / 20))
    [note] = _inflated(slow)
    assert "20x the step timed without the profiler" in note


def test_the_note_needs_a_true_step_and_a_ratio_of_five():
    report = Report()
    report.summary.total_time_s, report.steps = 0.009, 3  # 3 ms of ops per step
    note_inflated_profile(report)  # no true step time: nothing to compare
    report.step_time = Timing(median_s=0.001, n=3)  # 3x: within what a profiler and a busy host do
    note_inflated_profile(report)
    assert not _inflated(report)
    report.step_time = Timing(median_s=0.0005, n=3)  # 6x
    note_inflated_profile(report)
    assert len(_inflated(report)) == 1 and "6x" in _inflated(report)[0]
