"""Every report.json committed under benchmarks/results/ and docs/ (the H200 results) still loads and renders the
figures it rendered when it was committed: the console report, the doctor's findings text and the HTML page's
summary, ranks and chart groups (tests/data/committed_reports.json).

The goldens were written from main before issue 17's refactoring (Report schema 2, renderer protocol), so a change
here is a change users see; a field added since (a new key) is allowed. To rewrite them after a deliberate change to what a report shows:
``ROOFLINE_WRITE_GOLDENS=1 PYTHONPATH=src python -m pytest tests/report/test_committed_reports.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from roofline.render.console import render_report
from roofline.render.findings import render_findings
from roofline.render.html import report_payload
from roofline.report import Report

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "data" / "committed_reports.json"
WIDTH = 120
_BY_NAME = ("time_by_module_s", "time_by_op_s")  # long tables: their size and total stand for them


def _committed_reports() -> list[str]:
    files = subprocess.run(["git", "ls-files", "benchmarks/results", "docs"], cwd=REPO, capture_output=True,
                           text=True, check=True).stdout.split()
    return sorted(f for f in files if Path(f).name in ("report.json", "report.json.gz"))


def key_figures(report: Report) -> dict:
    """What a user sees of a report, as plain JSON: the console and findings text at a fixed width, and the HTML
    payload's figures (everything but the per-op columns, which the op counts and totals stand for)."""
    payload = json.loads(json.dumps(report_payload(report), default=str))
    return {
        "schema_version": report.schema_version,
        "kind": report.kind,
        "n_ops": len(report.ops),
        "n_kernels": len(report.kernels),
        "ops_by_bound": dict(sorted(Counter(op.bound for op in report.ops).items())),
        "share_by_bound": report.summary.share_by_bound,
        "console": render_report(report).splitlines(),
        "findings": render_findings(report.findings, total_time_s=report.summary.reference_time_s,
                                    width=WIDTH).splitlines(),
        "html": {key: payload[key] for key in ("meta", "ranks", "syncs", "top_predicted")}
        | {"summary": {k: v if k not in _BY_NAME else [len(v), sum(v.values())] for k, v in payload["summary"].items()},
           "findings": [[f["rule"], f["estimated_savings_s"], f["share_of_time"]] for f in payload["findings"]],
           "chart_groups": payload["chart"]["n_groups"],
           "modules": {child["name"]: child["time_s"] for child in payload["modules"]["children"]}},
    }


@pytest.fixture(scope="module")
def goldens(request):
    write = bool(os.environ.get("ROOFLINE_WRITE_GOLDENS"))
    data = {} if write or not GOLDEN.exists() else json.loads(GOLDEN.read_text())
    yield data
    if write:
        GOLDEN.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def test_every_committed_report_has_a_golden():
    assert _committed_reports(), "no committed report.json found"
    if not os.environ.get("ROOFLINE_WRITE_GOLDENS"):
        assert sorted(json.loads(GOLDEN.read_text())) == _committed_reports()


@pytest.mark.slow
@pytest.mark.parametrize("path", _committed_reports())
def test_committed_report_renders_as_committed(path, goldens, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    figures = json.loads(json.dumps(key_figures(Report.load(REPO / path))))
    if os.environ.get("ROOFLINE_WRITE_GOLDENS"):
        goldens[path] = figures
        return
    expected = goldens[path]
    for key in expected:
        assert _same(expected[key], figures[key]), f"{path}: {key} differs from the committed rendering"


def _same(expected, actual) -> bool:
    """Equal, except that an object, in a list or not, may have gained keys: a field added since (with its default)
    is a new figure, not a changed one (SyncSite.device_idle_s in the HTML payload's syncs)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        return all(k in actual and _same(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list) and isinstance(actual, list):  # a list's records may have gained keys too
        return len(expected) == len(actual) and all(_same(e, a) for e, a in zip(expected, actual))
    return expected == actual
