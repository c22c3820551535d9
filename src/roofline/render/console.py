"""Console tables (rich) for ceilings and for a Report's roofline. Formatting only: every number comes from the Report."""

from __future__ import annotations

import heapq
import io
import shutil
import sys
import textwrap
from operator import attrgetter

from rich.console import Console
from rich.table import Table

from roofline.analyze.communication import message_unrecorded
from roofline.render.units import fmt_bytes, fmt_count, fmt_pct, fmt_rate, fmt_time, rate_unit
from roofline.report import BOUNDS, Ceilings, KernelClasses, Report

BOUND_STYLE = {"compute": "red", "memory": "blue", "launch": "grey50", "communication": "magenta",
               "unmodeled": "yellow"}


def terminal_width() -> int:
    """Columns of the user's terminal ($COLUMNS first; 120 when output is not a terminal)."""
    return max(40, shutil.get_terminal_size((120, 24)).columns)


def fit(text: str, width: int | None = None) -> str:
    """Each line wrapped at word boundaries to the width (continuations keep the line's indent); words are never
    split: one longer than a whole line (a kernel name, say) is shortened with an ellipsis instead."""
    width = width or terminal_width()
    out = []
    for line in text.splitlines():
        if len(line) <= width:
            out.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip()) + 2)
        room = width - len(indent)
        line = " ".join(w if len(w) <= room else w[: room - 1] + "…" for w in line.split(" "))
        out.extend(textwrap.wrap(line, width, subsequent_indent=indent, break_long_words=False,
                                 break_on_hyphens=False) or [line])
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


class TextBuffer(io.StringIO):
    """Where a console renderer draws: carries stdout's encoding, so that rich draws its tables with ASCII boxes
    for a terminal that cannot show the others (LANG=C on an old system, PYTHONIOENCODING=ascii)."""

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(sys.stdout, "encoding", None) or "utf-8"


def to_text(*renderables, width: int | None = None) -> str:
    width = width or terminal_width()
    buf = TextBuffer()
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
        row(f"peak {dtype}", rate, sheet.peak_flops_per_s.get(dtype) if sheet else None, rate_unit(dtype))
    if c.cache_bandwidth_bytes_per_s > 0:
        row(f"cache bandwidth (last level, {fmt_bytes(c.cache_bytes)})", c.cache_bandwidth_bytes_per_s, None, "B/s")
    if c.shared_memory_bandwidth_bytes_per_s:
        row("shared memory bandwidth (all SMs)", c.shared_memory_bandwidth_bytes_per_s, None, "B/s")
    elif c.device.startswith("cuda"):
        table.add_row("shared memory bandwidth (all SMs)", "not measured", "-", "-")
    table.add_row("launch overhead (eager)", fmt_time(c.launch_overhead_s), "-", "-")
    if c.launch_overhead_graph_s is not None:
        table.add_row("launch overhead (CUDA graph)", fmt_time(c.launch_overhead_graph_s), "-", "-")
    for dtype in c.peak_flops_per_s:
        table.add_row(f"ridge point {dtype}", f"{c.ridge_point(dtype):.3g} FLOP/B", "-", "-")
    return table


def render_ceilings(c: Ceilings) -> str:
    text = to_text(ceilings_table(c))
    note = f"How: {c.method}" if c.method else ""
    if c.measured_at:
        load = f", load average {' / '.join(f'{x:g}' for x in c.load_average)} (1/5/15 min)" if c.load_average else ""
        threads = f", {c.threads} threads" if c.threads else ""
        note += f"\nMeasured: {c.measured_at}{threads}{load}"
    if c.shared_memory_method:
        note += f"\nShared memory: {c.shared_memory_method}"
    if c.datasheet:
        note += f"\nDatasheet: {c.datasheet.source}"
    return text + fit(note) + "\n"


UNKNOWN = "?"  # an unmodelled op's work is unknown, never zero


# Columns of the op table, most important first; a narrow terminal drops them from the end rather than breaking
# words (source, bytes, FLOP... go before op, time, share, % of roof and bound).
_OP_COLUMNS = ("op", "time", "share", "% of roof", "bound", "module", "dtype", "achieved", "FLOP/B", "FLOP",
               "bytes", "source")
_ESSENTIAL = 5  # op, time, share, % of roof, bound: kept whatever the width; a long op name is cut instead
_MIN_OP_WIDTH = 12
_RIGHT = {"time", "share", "FLOP", "bytes", "FLOP/B", "achieved", "% of roof", "calls"}


def ops_table(report: Report, top: int = 15, width: int | None = None) -> Table:
    """The top ops, or for a report of several steps its top calls summed over them (``Summary.top_calls``); with
    the columns that fit in `width` (all when None), never wrapping a cell."""
    total = report.summary.total_time_s or sum(op.time_s for op in report.ops) or 1.0
    roofs = report.ceilings.has_roofs()
    # what the analysis timed: a CPU trace's op times are host durations (Summary.timing_method says which)
    clock = "host time" if report.summary.timing_method.startswith("host time") else "device time"
    calls = report.summary.top_calls[:top]
    if calls:
        rows = [{**_op_cells(call, total, roofs), "calls": f"{call.calls:,}"} for call in calls]
        steps = max(call.steps for call in calls)
        title = f"Top {len(calls)} op calls by {clock}, summed over {steps} steps (of {len(report.ops):,} ops)"
        columns = list(_OP_COLUMNS[:5]) + ["calls"] + list(_OP_COLUMNS[5:])
    else:
        ops = heapq.nlargest(top, report.ops, key=attrgetter("time_s"))  # = sorted(reverse=True)[:top], ties too
        rows = [_op_cells(op, total, roofs) for op in ops]
        title = f"Top {len(ops)} ops by {clock} (of {len(report.ops)})"
        columns = list(_OP_COLUMNS)
    op_width = 40
    while True:
        table = Table(title=title, title_justify="left")
        for col in columns:
            table.add_column(col, justify="right" if col in _RIGHT else "left", no_wrap=True, overflow="ellipsis",
                             max_width={"module": 28, "op": op_width}.get(col))
        for cells in rows:
            table.add_row(*(cells[c] for c in columns))
        if width is None:
            return table
        excess = _table_width(table) - width
        if excess <= 0:
            return table
        if len(columns) > _ESSENTIAL:
            columns = columns[:-1]
        elif op_width > _MIN_OP_WIDTH:
            op_width = max(_MIN_OP_WIDTH, op_width - excess)
        else:
            return table


def _table_width(table: Table) -> int:
    console = Console(width=10_000, file=io.StringIO())
    return console.measure(table).maximum


def _no_bytes(op) -> str:
    """An unmodelled op's bytes: unknown, unless it is a collective that sends nothing (a barrier, a wait)."""
    if op.bound == "communication" and not message_unrecorded(op):
        return "-"
    return UNKNOWN


def _op_cells(op, total: float, roofs: bool = True) -> dict[str, str]:
    style = BOUND_STYLE.get(op.bound, "")
    return {
        "op": op.name.removeprefix("aten::"),
        "module": op.module or "-",
        "dtype": op.dtype or "-",
        "time": fmt_time(op.time_s),
        "share": fmt_pct(op.time_s / total),
        "FLOP": fmt_count(op.flops) if op.modeled else UNKNOWN,
        "bytes": fmt_bytes(op.bytes) if op.modeled or (op.bound == "communication" and op.bytes) else _no_bytes(op),
        "FLOP/B": f"{op.arithmetic_intensity:.3g}" if op.modeled else "-",
        "achieved": (fmt_rate(op.achieved_flops_per_s, "FLOP/s") if op.flops else fmt_rate(op.achieved_bytes_per_s, "B/s"))
        if op.modeled or (op.bound == "communication" and op.bytes) else _no_bytes(op),
        "% of roof": _roof_cell(op) if op.modeled and roofs else "-",
        "bound": f"[{style}]{op.bound}[/{style}]" if style else op.bound,
        "source": _short_source(op.source),
    }


def _roof_cell(op) -> str:
    """Efficiency against the roof the analysis judged the op by (analyze/roofline.py), naming the cache roof."""
    if op.roof == "cache-unknown":
        return "from cache"
    text = fmt_pct(op.efficiency) + (" cache" if op.roof == "cache" else "")
    return text + (" (above!)" if op.above_roof else "")


def _short_source(source: str | None) -> str:
    """The last two path parts and the line: enough to find it, short enough for a table cell."""
    if not source:
        return "-"
    path, sep, line = source.rpartition(":")
    path, line = (path, f":{line}" if line else "") if sep else (source, "")
    if ", in " in source and not line[1:].isdigit():  # a function with no known line ("train.py, in main()")
        path, sep, line = source.partition(", in ")
        line = sep + line
    parts = path.replace("\\", "/").split("/")
    return "/".join(parts[-2:]) + line


def summary_table(report: Report) -> Table:
    s = report.summary
    total = s.total_time_s or 1.0
    table = Table(title="Where the time goes", title_justify="left")
    table.add_column("class")
    table.add_column("time", justify="right")
    table.add_column("share", justify="right")
    for bound in BOUNDS:
        t = s.time_by_bound_s.get(bound, 0.0)
        if bound in ("unknown", "communication") and not t:
            continue
        table.add_row(bound, fmt_time(t), fmt_pct(s.share_by_bound.get(bound, t / total)))
    table.add_row("total (sum of ops)", fmt_time(s.total_time_s), "100%")
    if report.ceilings.has_roofs():
        table.add_row("predicted (roofline)", fmt_time(s.predicted_total_s),
                      fmt_pct(s.predicted_total_s / total) if s.total_time_s else "-")
    return table


def kernel_class_table(kc: KernelClasses) -> Table:
    """Device time per step by kernel class (the analysis's KernelClasses), then the gaps between kernels."""
    span = kc.span_s or 1.0
    table = Table(title=f"Device time by kernel class (per {kc.unit})", title_justify="left")
    for name, right in (("class", False), ("time", True), ("share of span", True), ("kernels", True),
                        ("bytes (model)", True), ("achieved", True), ("% of roof", True)):
        table.add_column(name, justify="right" if right else "left")
    for c in kc.classes:
        table.add_row(c.name, fmt_time(c.time_s), fmt_pct(c.time_s / span), f"{c.kernels:,.1f}".rstrip("0").rstrip("."),
                      fmt_bytes(c.bytes) if c.bytes is not None else "-",
                      fmt_rate(c.achieved_bytes_per_s, "B/s") if c.achieved_bytes_per_s is not None else "-",
                      fmt_pct(c.share_of_roof) if c.share_of_roof is not None else "-")
    table.add_row("between kernels", fmt_time(kc.gaps_s), fmt_pct(kc.gaps_s / span), "", "", "", "")
    if kc.overlapped_s > 0:
        table.add_row("(ran under an earlier kernel)", fmt_time(kc.overlapped_s), "", "", "", "", "")
    table.add_row("span, first to last kernel", fmt_time(kc.span_s), "100%", f"{kc.kernels:,.1f}".rstrip("0").rstrip("."),
                  "", "", "")
    return table


def _roofs(c: Ceilings) -> str:
    if not c.has_roofs():
        return "none known (times and findings only)"
    return (f"memory {fmt_rate(c.memory_bandwidth_bytes_per_s, 'B/s')}, "
            + ", ".join(f"{d} {fmt_rate(v, rate_unit(d))}" for d, v in c.peak_flops_per_s.items())
            + f", launch {fmt_time(c.launch_overhead_s)} ({c.source})"
            + (f"; cache roof {fmt_rate(c.cache_bandwidth_bytes_per_s, 'B/s')} ({fmt_bytes(c.cache_bytes)} last-level "
               "cache)" if c.cache_bandwidth_bytes_per_s > 0 else ""))


def render_report(report: Report, top: int = 15) -> str:
    s = report.summary
    lines = []
    env = report.environment
    if "torch_version" in env.unknown and not env.torch_version:
        torch = "; torch version not recorded" + (" in the trace" if report.kind == "trace" else "")
    else:
        torch = f" (torch {env.torch_version or 'unknown'})"
    lines.append(f"roofline report: {report.workload or report.kind} on {env.device_name or report.ceilings.device}"
                 f"{torch}")
    c = report.ceilings
    if report.extra.get("partial"):
        lines.insert(0, "PARTIAL REPORT: the trace is cut short; what follows covers only the events read before the cut")
    by_device = report.ceilings_by_device()
    if by_device:
        lines.extend(f"Roofs of device {d} ({g.device_name or g.device}): {_roofs(g)}" for d, g in by_device.items())
    elif c.has_roofs():
        lines.append(f"Roofs: {_roofs(c)}")
    else:
        lines.append("Roofs: none known for this device (times and findings only; see the warning below)")
    width = terminal_width()
    if s.stale_ceilings:
        lines.append(f"Warning: {s.stale_ceilings}")
    tables = [summary_table(report), ops_table(report, top, width=width)]
    if s.kernel_classes is not None:
        tables.append(kernel_class_table(s.kernel_classes))
    body = to_text(*tables, width=width)
    notes = []
    if s.timing_method:
        notes.append(f"Timing: {s.timing_method}")
    if s.kernel_time_attributed_share is not None:
        notes.append(f"Kernel time attributed to an op: {fmt_pct(s.kernel_time_attributed_share)}")
    notes.append(f"Unmodeled ops' share of time: {fmt_pct(s.unmodeled_time_share)}")
    if s.ops_from_cache:
        notes.append(f"{s.ops_from_cache} op(s) beat the DRAM roof with data that fits in the last-level cache: served "
                     + ("from cache, judged against the cache roof (% of roof marked 'cache')"
                        if c.cache_bandwidth_bytes_per_s > 0 else
                        "from cache; these ceilings have no cache roof, so their % of roof is not shown (re-measure the "
                        "ceilings on that device for one)"))
    if s.ops_above_roof:
        notes.append(f"{s.ops_above_roof} op(s) measured above the roof (cache reuse or a counting error): flagged, not hidden")
    if report.step_time is not None and report.step_time.n:
        notes.append(f"True step time (no profiler): {fmt_time(report.step_time.median_s)} "
                     f"(median of {report.step_time.n}, spread {fmt_time(report.step_time.spread_s)})")
    if report.ncu is not None:
        n = report.ncu
        l2 = f", L2 {fmt_bytes(n.l2_bytes)}" if n.l2_bytes is not None else ""
        notes.append(f"Nsight Compute: {n.kernels_joined} of {n.kernels} kernels joined ({fmt_pct(n.joined_share)}); "
                     f"DRAM {fmt_bytes(n.dram_bytes)}{l2} against a modelled minimum of {fmt_bytes(n.modelled_bytes)} "
                     f"over {n.ops_measured} ops (memory.png, report.html)")
        notes.extend(n.notes)
    if s.kernel_classes is not None:
        notes.append(f"Kernel classes: {s.kernel_classes.method}")
    notes.extend(s.notes)
    return fit("\n".join(lines), width) + "\n" + body + fit("\n".join(notes), width) + "\n"


class ConsoleRenderer:
    """The report's console text: roofs, where the time goes, the ``top`` ops, notes."""

    file_name = "report.txt"

    def __init__(self, top: int = 15) -> None:
        self.top = top

    def render(self, report: Report) -> str:
        return render_report(report, self.top)
