"""report_from_profile on a recorded H200 trace: Kineto's own sync sites kept beside the live detector's."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline.analyze.profiled import PARTIAL_STEP_WARMUP_NOTE, report_from_profile
from roofline.capture.profiling import ProfileRecord
from roofline.report import Ceilings

DATA = Path(__file__).resolve().parents[1] / "data" / "h200"
H200 = Ceilings(device="cuda", device_name="NVIDIA H200", memory_bandwidth_bytes_per_s=4.8e12,
                peak_flops_per_s={"float32": 67e12}, launch_overhead_s=5e-6, source="measured")


def test_the_traces_own_sync_sites_are_kept_in_the_profile_and_the_live_count_is_noted():
    record = ProfileRecord(trace_path=DATA / "bad_syncs_fwd_fp32.json.gz", device="cuda", workload="w", ceilings=H200,
                           schedule={"active": 2}, steps_seen=2, whole_block=False, block_s=0.0,
                           true_step_s=[1e-3, 2e-3], profiled_step_s=[2e-3, 3e-3], timed_after_profiler=False,
                           reference_peak_bytes=None, syncs=[], sync_steps=2, syncs_in_warmup=False,
                           syncs_simulated=False, error=None)
    report = report_from_profile(record)
    # the trace's item / copy sites (tests/capture/test_syncs.py reads the same file raw): 10 of each per step
    assert {s.kind: s.per_step for s in report.profile.syncs_from_trace} == {
        "item": 10, "copy to host": 10, "copy to device": 10}
    assert "syncs: counted live over 2 step(s) (the profiled steps)" in report.summary.notes
    assert report.step_time.n == 2 and report.steps == 2


def _record(**kw) -> ProfileRecord:
    fields = dict(trace_path=DATA / "bad_syncs_fwd_fp32.json.gz", device="cuda", workload="w", ceilings=H200,
                  schedule={"wait": 0, "timed": 0, "warmup": 0, "active": 2}, steps_seen=2, whole_block=False,
                  block_s=0.0, true_step_s=[1e-3, 2e-3], profiled_step_s=[2e-3, 3e-3], timed_after_profiler=False,
                  reference_peak_bytes=None, syncs=[], sync_steps=2, syncs_in_warmup=False, syncs_simulated=False,
                  error=None)
    return ProfileRecord(**(fields | kw))


def test_the_unfinished_steps_syncs_are_left_out_with_its_ops():
    """A run that ended in its last active step: that step's ops are part of no step, and so are the syncs they
    made (counted, the item sites read 20 calls at 20 a step over the one finished step)."""
    whole = report_from_profile(_record())
    ended = report_from_profile(_record(steps_seen=1, true_step_s=[1e-3], profiled_step_s=[2e-3]))
    assert ended.steps == 1 and any("1 of the 2 active steps profiled" in n for n in ended.summary.notes)
    assert {s.kind: (s.count, s.per_step) for s in ended.profile.syncs_from_trace} == {
        s.kind: (s.count // 2, s.per_step) for s in whole.profile.syncs_from_trace}


@pytest.mark.parametrize("partial, whole_block, noted", [(1, False, True), (0, False, False), (1, True, False)])
def test_a_thrown_away_partial_warmup_step_is_noted_only_when_there_was_one(partial, whole_block, noted):
    report = report_from_profile(_record(partial_step_warmup=partial, whole_block=whole_block,
                                         block_s=5e-3 if whole_block else 0.0))
    assert (PARTIAL_STEP_WARMUP_NOTE in report.summary.notes) is noted
