"""The console's op table at narrow widths: the essential columns stay and a long op name is cut instead."""

from __future__ import annotations

import pytest

from roofline.analyze.roofline import place_op, summarize
from roofline.render.console import ops_table, render_report
from roofline.report import Ceilings, OpRecord, Report

LONG = "aten::_scaled_dot_product_flash_attention_for_cpu_with_a_longer_name"


def _report() -> Report:
    c = Ceilings(device="cpu", device_name="Test CPU", memory_bandwidth_bytes_per_s=2e10,
                 peak_flops_per_s={"float32": 1e11}, launch_overhead_s=5e-6, source="measured")
    ops = [OpRecord(name=LONG, dtype="float32", flops=4e9, bytes=2e7, time_s=0.05, module="layers.0.attention"),
           OpRecord(name="aten::mm", dtype="float32", flops=2e9, bytes=1e7, time_s=0.02, module="layers.0.mlp")]
    for op in ops:
        place_op(op, c)
    return Report(workload="narrow", ceilings=c, ops=ops, summary=summarize(ops))


@pytest.mark.parametrize("width", [60, 80])
def test_a_long_op_name_is_cut_before_the_bound_column_is_dropped(width, monkeypatch):
    headers = [c.header for c in ops_table(_report(), width=width).columns]
    assert headers == ["op", "time", "share", "% of roof", "bound"]
    monkeypatch.setenv("COLUMNS", str(width))
    lines = render_report(_report()).splitlines()
    assert max(len(line) for line in lines) <= width
    row = next(line for line in lines if "_scaled_dot" in line)
    assert "…" in row and row.split("│")[5].strip() in {"compute", "memory", "launch"}


def test_a_wide_terminal_keeps_the_whole_name_and_more_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert LONG.removeprefix("aten::")[:38] in render_report(_report())
    assert "module" in [c.header for c in ops_table(_report(), width=200).columns]
