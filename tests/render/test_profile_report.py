"""ProfileReport renders a Report (from the real H200 bad-syncs trace) to text, report.json and a valid trace."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest

from roofline.render.chrome_trace import validate_chrome_trace
from roofline.render.profile_report import ProfileReport
from roofline.analyze.roofline import host_time_by_op
from roofline.report import LiveTensor, MemorySummary, OpRecord, ProfileInfo, Report, SyncSite, Timing

DATA = Path(__file__).resolve().parents[1] / "data" / "h200"
BAD_SYNCS = DATA / "bad_syncs_fwd_fp32.json.gz"


@pytest.fixture(scope="module")
def bad_syncs_report() -> Report:
    kineto = pytest.importorskip("roofline.capture.kineto")
    pipeline = pytest.importorskip("roofline.analyze.pipeline")
    from roofline.device.ceilings import ceilings_for_device_name

    trace = kineto.load_trace(BAD_SYNCS)
    return pipeline.report_from_trace(trace, ceilings_for_device_name(trace.device_name), None, kind="profile")


def test_h200_bad_syncs_report_finds_its_syncs_per_step(bad_syncs_report: Report, tmp_path: Path) -> None:
    out = io.StringIO()
    written = ProfileReport(bad_syncs_report, BAD_SYNCS).generate(tmp_path, console=out)
    data = json.loads(written["report"].read_text())
    per_step = {s["kind"]: s["per_step"] for s in data["syncs"]}
    assert per_step["item"] == 10 and per_step["copy to host"] == 10
    assert all({"kind", "location", "count", "stall_s"} <= set(s) for s in data["syncs"])
    assert data["memory"]["peak_allocated_bytes"] == 1109180928
    assert data["memory"]["peak_live_tensors"]
    text = out.getvalue()
    assert "Host-device syncs: 60 at 3 site(s)" in text and "record_traces.py:84" in text
    calls = "Top 6 op calls by device time, summed over 2 steps"  # each op once a step
    assert calls in text and "Top 15 ops by CPU time" in text
    assert text.index("Host-device syncs") < text.index(calls) < text.index("Doctor:")
    trace = json.loads(gzip.decompress(written["trace"].read_bytes()))
    assert validate_chrome_trace(trace) == []


def test_text_report_shows_true_vs_profiled_time_and_memory() -> None:
    ops = [OpRecord("aten::mm", time_s=2e-3, cpu_time_s=1e-3), OpRecord("aten::add", time_s=1e-3, cpu_time_s=3e-3),
           OpRecord("aten::add", time_s=1e-3, cpu_time_s=1e-3)]
    rows, total = host_time_by_op(ops)
    report = Report(
        workload="toy",
        ops=ops,
        profile=ProfileInfo(host_time_by_op=rows, host_time_total_s=total),
        syncs=[SyncSite("item", "train.py:12", count=20, stall_s=1e-3, per_step=10)],
        memory=MemorySummary(peak_allocated_bytes=3 << 20, counter="allocated (test)",
                             peak_live_tensors=[LiveTensor(2 << 20, [512, 1024], "float32", "aten::mm", "fc", "m.py:3")]),
        step_time=Timing.from_samples([0.010, 0.011, 0.010], "test"),
        profiled_step_time=Timing.from_samples([0.015, 0.015, 0.016], "test"),
    )
    text = ProfileReport(report).text()
    assert "the profiler added +50% to the step" in text
    assert "3 MiB (allocated (test))" in text and "float32[512, 1024]  aten::mm  fc at m.py:3" in text
    device_section = text[text.index("by device time"):]
    assert device_section.index(" mm ") < device_section.index(" add ")
    cpu_section = text[text.index("by CPU time"):]
    assert cpu_section.index("aten::add") < cpu_section.index("aten::mm")
    assert "aten::add                                     2       4 ms  80.0%" in cpu_section
    assert "(not in this report" in ProfileReport(Report(ops=ops)).text()
    assert "item" in text and "train.py:12" in text


def test_without_a_profiler_trace_the_trace_is_built_from_the_report(tmp_path: Path) -> None:
    report = Report(ops=[OpRecord("aten::mm", time_s=1e-3)])
    written = ProfileReport(report).generate(tmp_path, console=False)
    assert validate_chrome_trace(json.loads(gzip.decompress(written["trace"].read_bytes()))) == []
    assert Report.load(written["report"]).ops[0].name == "aten::mm"


@pytest.mark.parametrize("profiled", [[0.0217, 0.0227, 0.0238],  # faster under the profiler: noise (sweep 3's MoE)
                                      [0.0270, 0.0280, 0.0290]])  # slower, but by less than the true steps' spread
def test_a_profiler_cost_within_the_noise_is_not_reported_as_added_or_negative(profiled) -> None:
    report = Report(workload="toy", ops=[OpRecord("aten::mm", time_s=2e-3, cpu_time_s=1e-3)],
                    step_time=Timing.from_samples([0.0220, 0.0264, 0.0330], "test"),
                    profiled_step_time=Timing.from_samples(profiled, "test"))
    text = ProfileReport(report).text()
    assert "the profiler added" not in text
    line = next(ln for ln in text.splitlines() if "profiler's cost" in ln)
    change = f"{Timing.from_samples(profiled, 'test').median_s / 0.0264 - 1:+.0%}"
    assert f"within these timings' noise (under it the step took {change}, spread" in line


def test_a_trace_over_the_annotation_limit_is_copied_as_it_is_never_read_whole(
        bad_syncs_report: Report, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A profile's trace is a temporary file: one too large to annotate (a whole-script profile of HF generate
    with Python stacks passed 12 GB while it was parsed whole) is copied into trace.json.gz unannotated, a chunk
    at a time, and the command says so; it is never parsed."""
    import roofline.render.outputs as outputs
    import roofline.render.profile_report as profile_report

    monkeypatch.setattr(outputs, "AUGMENT_LIMIT_BYTES", 1 << 10)
    monkeypatch.setattr(profile_report, "read_chrome_trace", lambda *a: pytest.fail("the big trace was parsed"))
    profile = ProfileReport(bad_syncs_report, BAD_SYNCS)
    written = profile.generate(tmp_path, console=False)
    assert gzip.decompress(written["trace"].read_bytes()) == gzip.decompress(BAD_SYNCS.read_bytes())
    assert any("copied without roofline's per-op figures" in p for p in profile.problems), profile.problems
    assert Report.load(written["report"]).syncs
