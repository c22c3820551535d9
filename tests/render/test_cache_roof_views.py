"""Every view shows which roof an op was judged against (the analysis sets OpRecord.roof; views only format it)."""

from __future__ import annotations

import json
import math
import re

import matplotlib.pyplot as plt

from roofline.analyze.roofline import place_op, summarize
from roofline.render.console import render_ceilings, render_report
from roofline.render.html import chart_points, render_html, report_payload, safe_json
from roofline.render.png import draw_roofline
from roofline.report import Ceilings, OpRecord, Report

SHAPE = [32, 1024, 14, 14]


def _report(cache_bandwidth: float) -> Report:
    c = Ceilings(device="cuda", device_name="Test GPU", memory_bandwidth_bytes_per_s=4.66e12,
                 peak_flops_per_s={"float32": 5e13}, launch_overhead_s=6e-6,
                 cache_bandwidth_bytes_per_s=cache_bandwidth, cache_bytes=60 * 2**20, source="measured")
    n = math.prod(SHAPE)
    ops = [OpRecord(name="aten::relu_", dtype="float32", flops=n, bytes=8 * n, time_s=9.7e-6,
                    input_shapes=[SHAPE], input_dtypes=["float32"]),
           OpRecord(name="aten::mm", dtype="float32", flops=2e11, bytes=1e8, time_s=6e-3)]
    for op in ops:
        place_op(op, c)
    return Report(workload="cache", ceilings=c, ops=ops, summary=summarize(ops))


def _row(text: str, name: str) -> str:
    return next(line for line in text.splitlines() if name in line)


def test_console_names_the_cache_roof_and_never_shows_over_100_percent_without_one():
    measured = render_report(_report(7e12))
    assert "cache roof 7 TB/s (60 MiB last-level cache)" in measured
    assert re.search(r"\d+% cache", _row(measured, "relu_")) and "above" not in _row(measured, "relu_")
    assert "1 op(s) beat the DRAM roof" in measured and "judged against the cache roof" in measured
    unknown = render_report(_report(0.0))
    cells = [c.strip() for c in _row(unknown, "relu_").split("│")]
    assert "from cache" in cells and not any(re.fullmatch(r"1\d\d(\.\d)?%.*", c) for c in cells)
    assert "these ceilings have no cache" in unknown
    assert "cache bandwidth (last level" in render_ceilings(_report(7e12).ceilings)


def test_html_carries_the_roof_per_op_and_draws_the_cache_roof():
    report = _report(7e12)
    data = json.loads(safe_json(report_payload(report)))
    assert [data["strings"][i] for i in data["table"]["roof"]] == ["cache", "dram"]
    assert {p["name"]: p["roof"] for p in chart_points(report.ops)["points"]} == {"aten::relu_": "cache", "aten::mm": "dram"}
    page = render_html(report)
    assert "cache-roof" in page and '"Roof"' in page


def test_png_draws_the_cache_roof_and_squares_the_ops_judged_by_it():
    fig = draw_roofline(_report(7e12))
    try:
        labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    finally:
        plt.close(fig)
    assert any(label.startswith("cache roof 7 TB/s") for label in labels)
    assert any(label.startswith("served from cache (1 ops") for label in labels)


def test_an_integer_roof_reads_in_operations_not_flops():
    c = Ceilings(device="cpu", device_name="Test CPU", memory_bandwidth_bytes_per_s=2e10,
                 peak_flops_per_s={"float32": 2.07e11, "int8": 8.72e11}, source="measured")
    table = render_ceilings(c)
    assert "872 GOP/s" in _row(table, "peak int8") and "207 GFLOP/s" in _row(table, "peak float32")
    report = Report(workload="int8", ceilings=c, ops=[], summary=summarize([]))
    assert "int8 872 GOP/s" in render_report(report) and "float32 207 GFLOP/s" in render_report(report)
