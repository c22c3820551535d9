"""`roofline diff`: exit codes for better, worse-within-noise, worse-beyond-threshold and bad files; HTML out."""

from __future__ import annotations

import pytest

from roofline.analyze.diff import diff_reports
from roofline.cli import main
from roofline.render.diff import render_diff_console, render_diff_html
from roofline.render.html import safe_json
from roofline.report import Finding, OpRecord, Report, Summary, Timing


def _report(total_s: float, spread_s: float, module: str = "layers.0.mlp") -> Report:
    ops = [OpRecord(name="aten::mm", module=module, time_s=total_s * 0.8, flops=1e9, bytes=1e7, efficiency=0.7, bound="compute"),
           OpRecord(name="aten::add", module=module, time_s=total_s * 0.2, flops=1e6, bytes=1e7, efficiency=0.6, bound="memory")]
    samples = [total_s + spread_s * k / 2 for k in (-2, -1, 0, 1, 2)]
    return Report(ops=ops, summary=Summary(total_time_s=total_s), step_time=Timing.from_samples(samples, "CUDA events, 5 steps"))


@pytest.fixture
def files(tmp_path):
    def write(name: str, report: Report) -> str:
        return str(report.save(tmp_path / name))
    return write


def test_better_exits_0(files, capsys):
    a, b = files("a.json", _report(10e-3, 1e-5)), files("b.json", _report(9e-3, 1e-5))
    assert main(["diff", a, b, "--fail-above", "5"]) == 0
    out = capsys.readouterr().out
    assert "pass" in out and "IQR of step_time" in out


def test_worse_within_noise_exits_0(files, capsys):
    a, b = files("a.json", _report(10e-3, 1e-3)), files("b.json", _report(10.8e-3, 1e-3))
    assert main(["diff", a, b, "--fail-above", "5"]) == 0
    assert "within run-to-run noise" in capsys.readouterr().out


def test_worse_beyond_threshold_exits_1(files, capsys, tmp_path):
    a, b = files("a.json", _report(10e-3, 1e-5)), files("b.json", _report(10.8e-3, 1e-5))
    html = tmp_path / "diff.html"
    assert main(["diff", a, b, "--fail-above", "5", "--html", str(html)]) == 1
    assert "FAIL" in capsys.readouterr().out
    assert html.read_text().startswith("<!DOCTYPE html>")


def test_no_gate_exits_0_even_when_worse(files):
    a, b = files("a.json", _report(10e-3, 1e-5)), files("b.json", _report(20e-3, 1e-5))
    assert main(["diff", a, b]) == 0


def test_bad_files_exit_2_with_one_line(files, tmp_path, capsys):
    a = files("a.json", _report(10e-3, 1e-5))
    junk = tmp_path / "junk.json"
    junk.write_text("[1, 2")
    assert main(["diff", a, str(tmp_path / "missing.json")]) == 2
    assert main(["diff", a, str(junk)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("roofline: error:") for line in err)


def test_console_and_html_escape_user_strings():
    evil = "</script><script>alert(1)</script>[bold]"
    a, b = _report(10e-3, 1e-5, module=evil), _report(12e-3, 1e-5, module=evil)
    b.findings = [Finding(rule="r[x]", title="[red]t", category="c", locations=[evil])]
    d = diff_reports(a, b, fail_above_pct=5)
    text = render_diff_console(d)
    assert "[red]t" in text and "r[x]" in text
    page = render_diff_html(d)
    assert "<script>alert(1)" not in page
    assert safe_json(evil) in page



def test_each_warning_is_printed_once():
    a, b = _report(10e-3, 1e-5), _report(9e-3, 1e-5, module="encoder.block")
    a.workload, b.workload = "resnet50", "bert-base"
    diff = diff_reports(a, b)
    assert diff.warnings
    text = render_diff_console(diff)
    for warning in diff.warnings:
        assert text.count(warning[:60]) == 1, text
