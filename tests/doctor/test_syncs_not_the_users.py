"""Real traces whose sync events are no host-device syncs of the user's code: Kineto's stream waits and event polls
(HTA's public traces), and the syncs and step-start host time of the profiler's own code (traces `roofline
profile` recorded on the H200). A user's real syncs in the same trace still count."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SHARED
from roofline.analyze.trace_file import analyze_trace_file
from roofline.capture.trace_syncs import DEVICE_SIDE, NON_BLOCKING, PROFILER_OWN
from roofline.doctor import diagnose

DATA = Path(__file__).resolve().parents[1] / "data"
HTA = SHARED / "fixtures" / "public-traces" / "hta" / "critical_path"


def _diagnosed(path: Path):
    if not path.exists():
        pytest.skip(f"fixture {path} not present")
    report = analyze_trace_file(path)
    report.findings = diagnose(report)
    return report


def _sync_kinds(report) -> set[str]:
    return {kind for f in report.findings if f.rule == "host-device-sync" for kind in f.evidence["sync_kinds"]}


def test_alexnets_stream_waits_are_not_host_syncs_and_no_annotation_names_a_sync():
    report = _diagnosed(HTA / "alexnet" / "benchmark_result_2869224_1695835535_trace.json.gz")
    kinds = _sync_kinds(report)
    assert "cudnn_convolution" not in kinds and not any(k.startswith("[") for k in kinds), kinds
    assert "cuda.synchronize" in kinds  # the benchmark's own cudaDeviceSynchronize calls still block the host
    assert report.extra["syncs_left_out"] == {DEVICE_SIDE: 20}


def test_an_event_query_on_another_stream_is_not_a_host_sync():
    report = _diagnosed(HTA / "cuda_event_sync_multi_stream" / "event_sync_trace.json.gz")
    assert "mm" not in _sync_kinds(report)
    assert report.extra["syncs_left_out"] == {DEVICE_SIDE: 1, NON_BLOCKING: 3}


@pytest.mark.parametrize("name", ["cuda_graph_python_replay_h200", "triton_kernel_in_module_h200"])
def test_roofline_profiles_own_syncs_are_left_out_with_a_note(name):
    report = _diagnosed(DATA / "devtraces" / f"{name}.json.gz")
    assert not [f for f in report.findings if f.rule == "host-device-sync"]
    assert report.extra["syncs_left_out"] == {PROFILER_OWN: 7}
    assert any(n.startswith("sync events left out") for n in report.summary.notes)


def test_the_profilers_own_host_time_at_a_step_start_is_no_gpu_idle_of_the_users():
    report = _diagnosed(DATA / "devtraces" / "triton_kernel_in_module_h200.json.gz")
    assert report.extra["profiler_time"]
    assert not [f for f in report.findings if f.rule == "input-idle"]
    replay = _diagnosed(DATA / "devtraces" / "cuda_graph_python_replay_h200.json.gz")
    idle = [f for f in replay.findings if f.rule == "input-idle"]
    assert all(f.evidence["profiler_time_left_out_s"] > f.evidence["idle_at_start_s"] for f in idle)


def test_a_users_real_syncs_still_count_beside_the_profilers_stop():
    report = _diagnosed(DATA / "h200" / "bad_syncs_fwd_fp32.json.gz")
    # the blocking upload's stall is the host-to-device-copy finding's (doctor/rules/host_input.py), not a sync's
    assert _sync_kinds(report) == {"item", "copy to host"}
    assert any(f.rule == "host-to-device-copy" and f.evidence["blocking_copies"] == 20 for f in report.findings)
    assert all(f.evidence["per_step"] == 10 for f in report.findings if f.rule == "host-device-sync")
