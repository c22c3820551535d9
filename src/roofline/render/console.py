"""Console tables (rich) for ceilings and for a Report's roofline. Formatting only: every number comes from the Report."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from roofline.render.units import fmt_bytes, fmt_count, fmt_pct, fmt_rate, fmt_time
from roofline.report import Ceilings, Report

BOUND_STYLE = {"compute": "red", "memory": "blue", "launch": "grey50", "unmodeled": "yellow"}


def to_text(*renderables, width: int = 120) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=False, color_system=None, highlight=False)
    for r in renderables:
        console.print(r)
    return buf.getvalue()


def ceilings_table(c: Ceilings) -> Table:
    sheet = c.datasheet
    table = Table(title=f"Ceilings of {c.device_name or c.device} ({c.source})", title_justify="left")
    table.add_column("ceiling")
    table.add_column("measured", justify="right")
    table.add_column("datasheet (dense)", justify="right")
    table.add_column("measured / spec", justify="right")

    def row(label: str, measured: float | None, spec: float | None, unit: str) -> None:
        ratio = fmt_pct(measured / spec) if measured and spec else "-"
        table.add_row(label, fmt_rate(measured, unit), fmt_rate(spec, unit), ratio)

    row("memory bandwidth (roof)", c.memory_bandwidth_bytes_per_s, sheet.memory_bandwidth_bytes_per_s if sheet else None, "B/s")
    for kernel, rate in sorted(c.bandwidth_by_kernel_bytes_per_s.items()):
        row(f"  {kernel}", rate, None, "B/s")
    for dtype, rate in c.peak_flops_per_s.items():
        row(f"peak {dtype}", rate, sheet.peak_flops_per_s.get(dtype) if sheet else None, "FLOP/s")
    table.add_row("launch overhead (eager)", fmt_time(c.launch_overhead_s), "-", "-")
    if c.launch_overhead_graph_s is not None:
        table.add_row("launch overhead (CUDA graph)", fmt_time(c.launch_overhead_graph_s), "-", "-")
    for dtype in c.peak_flops_per_s:
        table.add_row(f"ridge point {dtype}", f"{c.ridge_point(dtype):.3g} FLOP/B", "-", "-")
    return table


def render_ceilings(c: Ceilings) -> str:
    text = to_text(ceilings_table(c))
    note = f"How: {c.method}" if c.method else ""
    if c.datasheet:
        note += f"\nDatasheet: {c.datasheet.source}"
    return text + note + "\n"


UNKNOWN = "?"  # an unmodelled op's work is unknown, never zero


def ops_table(report: Report, top: int = 15) -> Table:
    total = report.summary.total_time_s or sum(op.time_s for op in report.ops) or 1.0
    ops = sorted(report.ops, key=lambda op: op.time_s, reverse=True)[:top]
    table = Table(title=f"Top {len(ops)} ops by device time (of {len(report.ops)})", title_justify="left")
    for col, justify in (
        ("op", "left"), ("module", "left"), ("dtype", "left"), ("time", "right"), ("share", "right"),
        ("FLOP", "right"), ("bytes", "right"), ("FLOP/B", "right"), ("achieved", "right"),
        ("% of roof", "right"), ("bound", "left"), ("source", "left"),
    ):
        table.add_column(col, justify=justify, overflow="fold", no_wrap=col in ("source", "op"))
    for op in ops:
        style = BOUND_STYLE.get(op.bound, "")
        flag = " (above roof!)" if op.above_roof else ""
        table.add_row(
            op.name.removeprefix("aten::"),
            op.module or "-",
            op.dtype or "-",
            fmt_time(op.time_s),
            fmt_pct(op.time_s / total),
            fmt_count(op.flops) if op.modeled else UNKNOWN,
            fmt_bytes(op.bytes) if op.modeled else UNKNOWN,
            f"{op.arithmetic_intensity:.3g}" if op.modeled else "-",
            (fmt_rate(op.achieved_flops_per_s, "FLOP/s") if op.flops else fmt_rate(op.achieved_bytes_per_s, "B/s"))
            if op.modeled else UNKNOWN,
            fmt_pct(op.efficiency) + flag if op.modeled else "-",
            f"[{style}]{op.bound}[/{style}]" if style else op.bound,
            _short_source(op.source),
        )
    return table


def _short_source(source: str | None) -> str:
    """The last two path parts and the line: enough to find it, short enough for a table cell."""
    if not source:
        return "-"
    path, _, line = source.rpartition(":")
    parts = path.replace("\\", "/").split("/")
    return "/".join(parts[-2:]) + (f":{line}" if line else "")


def summary_table(report: Report) -> Table:
    s = report.summary
    total = s.total_time_s or 1.0
    table = Table(title="Where the time goes", title_justify="left")
    table.add_column("class")
    table.add_column("time", justify="right")
    table.add_column("share", justify="right")
    for bound in ("compute", "memory", "launch", "unmodeled"):
        t = s.time_by_bound_s.get(bound, 0.0)
        table.add_row(bound, fmt_time(t), fmt_pct(t / total))
    table.add_row("total (sum of ops)", fmt_time(s.total_time_s), "100%")
    table.add_row("predicted (roofline estimate)", fmt_time(s.predicted_total_s),
                  fmt_pct(s.predicted_total_s / total) if s.total_time_s else "-")
    return table


def render_report(report: Report, top: int = 15) -> str:
    s = report.summary
    lines = []
    env = report.environment
    lines.append(f"roofline report: {report.workload or report.kind} on {env.device_name or report.ceilings.device} "
                 f"(torch {env.torch_version})")
    c = report.ceilings
    lines.append(
        f"Roofs: memory {fmt_rate(c.memory_bandwidth_bytes_per_s, 'B/s')}, "
        + ", ".join(f"{d} {fmt_rate(v, 'FLOP/s')}" for d, v in c.peak_flops_per_s.items())
        + f", launch {fmt_time(c.launch_overhead_s)} ({c.source})"
    )
    body = to_text(summary_table(report), ops_table(report, top), width=160)
    notes = []
    if s.timing_method:
        notes.append(f"Timing: {s.timing_method}")
    if s.kernel_time_attributed_share is not None:
        notes.append(f"Kernel time attributed to an op: {fmt_pct(s.kernel_time_attributed_share)}")
    notes.append(f"Unmodeled ops' share of time: {fmt_pct(s.unmodeled_time_share)}")
    if s.ops_above_roof:
        notes.append(f"{s.ops_above_roof} op(s) measured above the roof (cache reuse or a counting error): flagged, not hidden")
    if report.step_time is not None and report.step_time.n:
        notes.append(f"True step time (no profiler): {fmt_time(report.step_time.median_s)} "
                     f"(median of {report.step_time.n}, spread {fmt_time(report.step_time.spread_s)})")
    notes.extend(s.notes)
    return "\n".join(lines) + "\n" + body + "\n".join(notes) + "\n"
