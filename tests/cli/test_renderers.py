"""The renderer protocol (render(report) -> text or bytes, and the file it goes in), the one write_outputs every
command uses, and the one findings cut-off: an option with the same default on every command that prints findings."""

from __future__ import annotations

import json

import pytest

from roofline.cli import build_parser
from roofline.render.console import ConsoleRenderer, render_report
from roofline.render.findings import FINDINGS_SHOWN, FindingsRenderer
from roofline.render.outputs import OUTPUT_FILES, OutputSkipped, report_renderers, write_outputs
from roofline.report import Finding, OpRecord, Report, Summary

COMMANDS = {"analyze": ["--model", "matmul"], "trace": ["t.json"], "merge": ["run"], "doctor": ["t.json"],
            "ort": ["m.onnx"]}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_that_prints_findings_has_the_same_cut_off(command):
    args = build_parser().parse_args([command, *COMMANDS[command]])
    assert args.findings == FINDINGS_SHOWN == 10
    assert build_parser().parse_args([command, "--findings", "0", *COMMANDS[command]]).findings == 0


def test_doctor_keeps_top_as_the_same_option():
    assert build_parser().parse_args(["doctor", "--top", "3", "t.json"]).findings == 3


def _report(n_findings: int) -> Report:
    findings = [Finding(f"rule-{i}", f"finding {i}", "x", estimated_savings_s=1e-3 * (n_findings - i))
                for i in range(n_findings)]
    return Report(workload="w", ops=[OpRecord(name="aten::mm", time_s=1e-3)], summary=Summary(total_time_s=1e-3),
                  findings=findings)


def test_findings_renderer_cuts_at_the_option_and_says_how_to_see_all():
    text = FindingsRenderer(3, width=120).render(_report(12))
    assert "rule-2" in text and "rule-3" not in text and "9 more finding(s) not shown; --findings 0" in text
    assert "rule-11" in FindingsRenderer(0, width=120).render(_report(12))
    assert ConsoleRenderer(5).render(_report(0)) == render_report(_report(0), 5)


def test_write_outputs_writes_each_renderers_file_and_reports_the_skipped(tmp_path):
    class Skipped:
        file_name = "trace.json.gz"

        def render(self, report):
            raise OutputSkipped("trace.json.gz not written: too big")

    renderers = [*report_renderers(png=False), Skipped()]
    assert {r.file_name for r in renderers} <= set(OUTPUT_FILES)
    written, problems = write_outputs(_report(1), tmp_path / "out", renderers)
    assert [p.name for p in written] == ["report.json", "report.html"]
    assert problems == ["trace.json.gz not written: too big"]
    assert json.loads((tmp_path / "out" / "report.json").read_text())["findings"][0]["rule"] == "rule-0"
