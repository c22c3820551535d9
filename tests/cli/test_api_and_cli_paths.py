"""The public API table imports, and the CLI success paths not covered elsewhere: `view`, `trace` with several
rank files, `trace --ceilings FILE`."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

import roofline
from roofline.cli import main
from roofline.device import save_ceilings
from roofline.report import Ceilings, Report

REPO = Path(__file__).resolve().parents[2]
H200 = REPO / "tests" / "data" / "h200"
RANKS = [REPO / "tests" / "data" / "hta" / "trace_filter" / f"sampled_rank-{r}.json.gz" for r in (0, 1)]


def test_every_name_of_the_lazy_export_table_imports():
    names = sorted(roofline._EXPORTS)
    namespace: dict = {}
    exec(f"from roofline import {', '.join(names)}", namespace)
    for name in names:
        value = namespace[name]
        assert value is getattr(importlib.import_module(roofline._EXPORTS[name]), name), name
        assert callable(value), name
    assert set(roofline.__all__) == set(names) | {"__version__"}
    with pytest.raises(AttributeError):
        roofline.no_such_name  # noqa: B018


def test_the_readme_entry_point_has_its_documented_methods():
    from roofline import RooflineAnalyzer

    analyzer = RooflineAnalyzer(device="cpu")
    assert callable(analyzer.analyze)


def _ceilings_file(tmp_path) -> tuple[Path, Ceilings]:
    c = Ceilings(device="cuda", device_name="NVIDIA H200", memory_bandwidth_bytes_per_s=1.234e12,
                 peak_flops_per_s={"float32": 4.321e13, "bfloat16": 3.21e14, "float16": 3.21e14},
                 launch_overhead_s=7e-6, source="measured", method="written by the test")
    path = tmp_path / "ceil.json"
    save_ceilings(c, path)
    return path, c


def test_trace_with_a_ceilings_file_uses_its_figures(tmp_path, capsys):
    path, c = _ceilings_file(tmp_path)
    out = tmp_path / "out"
    assert main(["trace", str(H200 / "bad_syncs_fwd_fp32.json.gz"), "--ceilings", str(path), "-o", str(out),
                 "--no-html"]) == 0
    report = Report.load(out / "report.json")
    assert report.ceilings.memory_bandwidth_bytes_per_s == c.memory_bandwidth_bytes_per_s
    assert report.ceilings.peak_flops_per_s["float32"] == c.peak_flops_per_s["float32"]
    assert report.ceilings.launch_overhead_s == c.launch_overhead_s
    mm = [op for op in report.ops if op.name == "aten::addmm" and op.time_s > 0][0]
    expected = max(mm.flops / c.peak_for(mm.dtype), mm.bytes / c.memory_bandwidth_bytes_per_s, c.launch_overhead_s)
    assert mm.predicted_time_s == pytest.approx(expected)


def test_trace_of_several_rank_files_merges_them(tmp_path, capsys):
    if not all(p.exists() for p in RANKS):
        pytest.fail("tests/data/hta/trace_filter rank traces missing")
    path, _ = _ceilings_file(tmp_path)
    out = tmp_path / "out"
    assert main(["trace", *map(str, RANKS), "--ceilings", str(path), "-o", str(out), "--no-html"]) == 0
    data = json.loads((out / "report.json").read_text())
    singles = []
    for i, rank in enumerate(RANKS):
        one = tmp_path / f"r{i}"
        assert main(["trace", str(rank), "--ceilings", str(path), "-o", str(one), "--no-html"]) == 0
        singles.append(Report.load(one / "report.json"))
    assert len(data["ranks"]) == 2
    assert len(data["ops"]) == len(singles[0].ops)  # the merged report carries the lowest rank's ops
    assert data["summary"]["total_time_s"] == pytest.approx(singles[0].summary.total_time_s)
    assert len(data["distributed"]["ranks_merged"]) == 2


def test_view_renders_a_saved_report_as_html(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["trace", str(H200 / "bad_syncs_fwd_fp32.json.gz"), "-o", str(out), "--no-html"]) == 0
    report = Report.load(out / "report.json")
    page = tmp_path / "page.html"
    assert main(["view", str(out / "report.json"), "-o", str(page)]) == 0
    html = page.read_text()
    assert html.lstrip().lower().startswith("<!doctype html")
    assert f"{len(report.ops):,} ops" in capsys.readouterr().out
    assert "aten::addmm" in html
    assert main(["view", str(out / "report.json")]) == 0
    assert (out / "report.html").read_text() == html
