"""Every report-producing command writes the same set of files next to report.json."""

import gzip
import json
from pathlib import Path

import pytest

from roofline.cli import main
from roofline.render.chrome_trace import validate_chrome_trace


H200 = Path(__file__).resolve().parents[1] / "data" / "h200"
EXPECTED = {"report.json", "roofline.png", "report.html", "trace.json.gz"}


def _written(directory) -> set[str]:
    return {p.name for p in directory.iterdir()}


def test_trace_writes_report_png_html_and_an_augmented_trace(tmp_path, capsys):
    assert main(["trace", str(H200 / "bad_syncs_fwd_fp32.json.gz"), "-o", str(tmp_path)]) == 0
    assert _written(tmp_path) == EXPECTED
    trace = json.loads(gzip.decompress((tmp_path / "trace.json.gz").read_bytes()))
    assert any("roofline.flops" in e.get("args", {}) for e in trace["traceEvents"] if isinstance(e, dict))
    html = (tmp_path / "report.html").read_text()
    assert "<html" in html.lower() and "http://" not in html.split("</head>")[0].lower().replace("http://www.w3.org", "")


def test_doctor_writes_report_png_and_html(tmp_path, capsys):
    assert main(["doctor", str(H200 / "resnet50_fwd_fp32_b32.json.gz"), "-o", str(tmp_path)]) == 0
    assert {"report.json", "roofline.png", "report.html"} <= _written(tmp_path)
    findings = json.loads((tmp_path / "report.json").read_text())["findings"]
    assert any(f["rule"] == "tf32-off" for f in findings)


@pytest.mark.slow
def test_profile_writes_report_png_html_and_a_valid_trace(tmp_path, capsys):
    assert main(["profile", "--model", "bad-syncs", "--device", "cpu", "-o", str(tmp_path)]) == 0
    assert _written(tmp_path) >= EXPECTED
    trace = json.loads(gzip.decompress((tmp_path / "trace.json.gz").read_bytes()))
    assert validate_chrome_trace(trace) == []


def test_write_outputs_collects_late_findings_once_for_every_file(tmp_path):
    """write_outputs(findings=...): report.json and report.html carry findings the doctor gave later, asked once."""
    from roofline.analyze.trace_file import analyze_trace_file
    from roofline.doctor import diagnose
    from roofline.render.outputs import write_outputs

    report = analyze_trace_file(H200 / "bad_syncs_fwd_fp32.json.gz")
    findings = diagnose(report)
    asked = []
    write_outputs(report, tmp_path / "late", png=False, findings=lambda: asked.append(1) or findings)
    assert asked == [1] and report.findings == findings
    write_outputs(report, tmp_path / "now", png=False)
    for name in ("report.json", "report.html"):
        assert (tmp_path / "late" / name).read_bytes() == (tmp_path / "now" / name).read_bytes()
    assert json.loads((tmp_path / "late" / "report.json").read_bytes())["findings"]
