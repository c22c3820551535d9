"""One set of numbers in every view: the console, the PNG legend, the HTML payload and report.json all show the
shares the Report computed once (Summary.share_by_bound, Finding.share_of_time), for several real reports."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from roofline.render.console import render_report
from roofline.render.findings import render_findings
from roofline.render.html import report_payload
from roofline.render.png import draw_roofline
from roofline.render.units import fmt_pct
from roofline.report import Report

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"

TRACES = ["bad_syncs_fwd_fp32.json.gz", "resnet50_fwd_fp32_b32.json.gz", "bert_base_fwd_fp32_b16_s128.json.gz"]


def _trace_report(name: str) -> Report:
    from roofline.analyze.trace_file import analyze_trace_file

    from roofline.doctor import diagnose

    report = analyze_trace_file(H200 / name)
    report.findings = diagnose(report)
    return report


def _cpu_report(cpu_ceilings) -> Report:
    from roofline.analyze.live import analyze_model
    from roofline.models import get_workload

    workload = get_workload("llama-tiny", batch=1, seq=32, device="cpu")
    from roofline.doctor import diagnose

    report = analyze_model(workload.model, workload.inputs, device="cpu", ceilings=cpu_ceilings, warmup=1, iters=2,
                           workload="llama-tiny")
    report.findings = diagnose(report)
    return report


@pytest.fixture(scope="module", params=TRACES + ["cpu-llama-tiny"])
def report(request, cpu_ceilings) -> Report:
    if request.param == "cpu-llama-tiny":
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return _cpu_report(cpu_ceilings)
        finally:
            torch.set_num_threads(threads)
    return _trace_report(request.param)


def test_every_view_shows_the_reports_shares(report, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    s = report.summary
    assert s.share_by_bound and sum(s.share_by_bound.values()) == pytest.approx(1.0)
    for bound, t in s.time_by_bound_s.items():
        assert s.share_by_bound[bound] == pytest.approx(t / s.total_time_s)

    console = render_report(report) + render_findings(report.findings, total_time_s=s.reference_time_s)
    rows = {line.split("│")[1].strip(): line for line in console.splitlines() if line.count("│") >= 3}
    for bound in ("compute", "memory", "launch", "unmodeled"):
        assert fmt_pct(s.share_by_bound.get(bound, 0.0)) in rows[bound]

    fig = draw_roofline(report)
    try:
        legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    finally:
        plt.close(fig)
    bound_entries = [t for t in legend if "-bound (" in t]
    assert bound_entries
    for entry in bound_entries:
        bound = entry.split("-bound")[0]
        assert f"({fmt_pct(s.share_by_bound[bound])} of op time)" in entry

    payload = report_payload(report)
    assert payload["summary"]["share_by_bound"] == s.share_by_bound
    html_shares = [f["share_of_time"] for f in payload["findings"]]
    assert sorted(html_shares, key=lambda x: -(x or 0)) == sorted(
        [f.share_of_time for f in report.findings], key=lambda x: -(x or 0))

    path = report.save(tmp_path / "report.json")
    saved = json.loads(path.read_text())
    assert saved["summary"]["share_by_bound"] == pytest.approx(s.share_by_bound)
    assert [f["share_of_time"] for f in saved["findings"]] == [f.share_of_time for f in report.findings]

    for finding in report.findings:
        assert finding.share_of_time == pytest.approx(finding.estimated_savings_s / s.reference_time_s)
        assert any(fmt_pct(finding.share_of_time) in line and finding.rule in line for line in console.splitlines())


def test_a_cpu_report_states_its_memory_peak_or_why_not(report):
    m = report.memory
    assert m.counter, "the memory summary must name its counter, or say why there is none"
    if m.peak_allocated_bytes == 0:
        assert m.counter.startswith("none")


def test_the_console_fits_80_columns_without_breaking_words(report, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    text = render_report(report) + render_findings(report.findings, total_time_s=report.summary.reference_time_s)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    header = next(line for line in lines if line.startswith("┃ op"))
    columns = [c.strip() for c in header.split("┃")[1:-1]]
    assert {"op", "time", "share", "bound"} <= set(columns)
    at = columns.index("bound") + 1
    below = lines[lines.index(header):]
    rows = [line for line in below[:next(i for i, line in enumerate(below) if line.startswith("└"))]
            if line.startswith("│")]
    assert rows and all(row.split("│")[at].strip() in {"compute", "memory", "launch", "unmodeled"} for row in rows)
