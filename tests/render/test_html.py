"""render_html without a browser: one self-contained document, escaped payload, aggregation for display."""

from __future__ import annotations

import json
import math
import re

import pytest

from roofline.render import html as html_mod
from roofline.render.html import chart_points, render_html, report_payload, safe_json
from roofline.report import ModuleTotals, Report, Summary

from roofline_synthetic import XSS, make_big_report, make_report, with_ranks


def _payload_of(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="roofline-data">(.*?)</script>', page, re.S)
    assert m
    return json.loads(m.group(1))


def test_page_is_self_contained_and_forbids_network():
    page = render_html(make_report(40))
    assert page.startswith("<!DOCTYPE html>")
    assert "default-src 'none'" in page and "connect-src 'none'" in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page), "no external resource"
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in page
    assert page.count("<script") == 2


def test_user_strings_cannot_close_the_script():
    report = make_report(20)
    report.ops[0].module = XSS
    report.ops[1].name = "aten::<b>bold</b>&amp;"
    report.findings[0].title = XSS
    report.environment.command_line = XSS
    page = render_html(report)
    assert XSS not in page
    assert "<script>alert(1)" not in page
    assert page.count("</script>") == 2
    data = _payload_of(page)
    assert XSS in data["strings"]
    assert data["findings"][1]["title"] == XSS or data["findings"][0]["title"] == XSS
    assert safe_json("<>&") == '"\\u003c\\u003e\\u0026"'


def test_embed_is_an_iframe_fragment():
    report = make_report(10)
    report.ops[0].module = XSS
    frag = render_html(report, embed=True)
    assert frag.startswith("<iframe srcdoc=") and frag.endswith("</iframe>")
    assert "<script" not in frag and XSS not in frag


def test_a_report_displays_as_its_page_in_ipython():
    interactiveshell = pytest.importorskip("IPython.core.interactiveshell")
    from roofline.notebook import register

    report = make_report(10)
    shell = interactiveshell.InteractiveShell.instance()
    try:
        assert register(shell)
        data, _ = shell.display_formatter.format(report)
    finally:
        interactiveshell.InteractiveShell.clear_instance()
    assert data["text/html"] == render_html(report, embed=True)


def test_to_pandas_has_one_row_per_op():
    pd = pytest.importorskip("pandas")
    report = make_report(12)
    frame = report.to_pandas()
    assert isinstance(frame, pd.DataFrame)
    assert len(frame) == 12 and {"name", "module", "time_s", "efficiency", "bound"} <= set(frame.columns)


def test_chart_groups_repeated_calls_and_skips_zero_work():
    report = make_report(80)
    chart = chart_points(report.ops)
    plotted = sum(p["n"] for p in chart["points"])
    assert plotted + chart["not_plotted"]["n"] == 80
    assert chart["not_plotted"]["n"] == sum(1 for op in report.ops if op.flops == 0)
    p = chart["points"][0]
    assert p["intensity"] == pytest.approx(p["flops"] / p["bytes"])
    assert chart["points"] == sorted(chart["points"], key=lambda q: -q["time_s"])


def test_chart_bins_beyond_max_points(monkeypatch):
    monkeypatch.setattr(html_mod, "MAX_POINTS", 50)
    report = make_big_report(3000)
    chart = chart_points(report.ops)
    assert len(chart["points"]) == 50 and chart["bins"]
    binned = sum(b["n"] for b in chart["bins"])
    assert binned + sum(p["n"] for p in chart["points"]) + chart["not_plotted"]["n"] == 3000
    assert sum(b["groups"] for b in chart["bins"]) == chart["n_groups"] - 50


def test_module_tree_is_the_summarys():
    """The page shows the Summary's module tree as it is: the renderer sums nothing (a tree that is not the ops'
    sum shows unchanged; a report with none shows none)."""
    report = make_report(40)
    report.summary.module_tree = ModuleTotals("(model)", time_s=7.0, n=3, children=[ModuleTotals("only", time_s=7.0, n=3)])
    payload = report_payload(report)
    assert payload["modules"] == {"name": "(model)", "time_s": 7.0, "flops": 0.0, "bytes": 0.0, "n": 3,
                                  "children": [{"name": "only", "time_s": 7.0, "flops": 0.0, "bytes": 0.0, "n": 3, "children": []}]}
    assert "module_tree" not in payload["summary"]
    report.summary = Summary(total_time_s=1.0)
    assert report_payload(report)["modules"] is None


def test_ranks_and_empty_report_render():
    page = render_html(with_ranks(make_report(10)))
    assert _payload_of(page)["ranks"][1]["straggler"] is True
    empty = render_html(Report())
    assert _payload_of(empty)["table"] == {}


def test_payload_table_is_columnar_and_interned():
    report = make_report(30)
    data = json.loads(safe_json(report_payload(report)))
    table, strings = data["table"], data["strings"]
    assert len(table["time_s"]) == 30
    assert strings[table["name"][0]] == report.ops[0].name
    assert table["time_s"][0] == pytest.approx(report.ops[0].time_s, rel=1e-4)
    assert json.loads(safe_json({"t": html_mod._RawColumns({"x": [float("nan"), 1.5]})})) == {"t": {"x": [0, 1.5]}}

@pytest.mark.parametrize("values", [
    [0.0, 1.5e-5, 3.0, 123456.789] * 20,  # repeated: each distinct value formatted once
    [i * 1.37e-6 for i in range(50)],  # distinct
    [float("nan"), float("inf"), float("-inf"), 2.5] * 10,  # the table shows 0 for what is not finite
    [0.0, -0.0, 1.0] * 10,  # one value to np.unique, two texts
])
def test_a_float_column_prints_each_value_with_5_digits(values):
    np = pytest.importorskip("numpy")
    expected = ",".join("%.5g" % v if math.isfinite(v) else "0" for v in values)
    assert html_mod._float_array_body(np.array(values)) == expected
    assert html_mod._column_body("time_s", values) == expected


def test_chart_sums_add_op_by_op_in_the_ops_order():
    # 1e16 + 1.0 rounds back to 1e16: added in the ops' order the group's time stays 1e16 (fsum, or the ones first,
    # would give 1e16 + 4)
    report = make_report(4)
    for op, t in zip(report.ops, [1e16, 1.0, 1.0, 1.0]):
        op.name, op.module, op.input_shapes, op.time_s, op.flops, op.bytes = "aten::mm", "m", [[2]], t, 1.0, 1.0
    (point,) = chart_points(report.ops)["points"]
    assert point["time_s"] == 1e16 != math.fsum(op.time_s for op in report.ops)
    assert point["n"] == sum(op.count for op in report.ops) and isinstance(point["n"], int)
